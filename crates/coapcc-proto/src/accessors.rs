//! Inherent option shortcuts shared by [`crate::Message`] and
//! [`crate::tcp::TcpMessage`] (both have a public `options: Options` field).

macro_rules! option_accessors {
    ($ty:ty) => {
        impl $ty {
            /// Value of the first option `number`; see [`Options::get`](crate::Options::get).
            pub fn option(&self, number: u16) -> Option<&[u8]> {
                self.options.get(number)
            }

            /// Values of all options `number`; see [`Options::get_all`](crate::Options::get_all).
            pub fn option_values(&self, number: u16) -> impl Iterator<Item = &[u8]> + '_ {
                self.options.get_all(number)
            }

            /// Adds an option, keeping the list sorted; see [`Options::add`](crate::Options::add).
            ///
            /// # Panics
            /// If the value exceeds [`MAX_OPTION_VALUE_LEN`](crate::option::MAX_OPTION_VALUE_LEN).
            pub fn add_option(&mut self, number: u16, value: impl AsRef<[u8]>) {
                self.options.add(number, value)
            }

            /// Replaces all options `number` by one; see [`Options::set`](crate::Options::set).
            ///
            /// # Panics
            /// If the value exceeds [`MAX_OPTION_VALUE_LEN`](crate::option::MAX_OPTION_VALUE_LEN).
            pub fn set_option(&mut self, number: u16, value: impl AsRef<[u8]>) {
                self.options.set(number, value)
            }

            /// Removes all options `number`; returns how many were removed.
            pub fn remove_option(&mut self, number: u16) -> usize {
                self.options.remove(number)
            }

            /// Uri-Path joined with `/`; see [`Options::uri_path`](crate::Options::uri_path).
            pub fn uri_path(&self) -> String {
                self.options.uri_path()
            }

            /// Appends Uri-Path options; see [`Options::add_uri_path`](crate::Options::add_uri_path).
            pub fn add_uri_path(&mut self, path: &str) {
                self.options.add_uri_path(path)
            }

            /// Uri-Query values; see [`Options::uri_queries`](crate::Options::uri_queries).
            pub fn uri_queries(&self) -> Vec<String> {
                self.options.uri_queries()
            }

            /// Appends a Uri-Query option.
            pub fn add_uri_query(&mut self, query: &str) {
                self.options.add_uri_query(query)
            }

            /// The Block2 option, if any; see [`Options::block2`](crate::Options::block2).
            pub fn block2(&self) -> Result<Option<crate::Block>, crate::BlockError> {
                self.options.block2()
            }

            /// The Block1 option, if any; see [`Options::block1`](crate::Options::block1).
            pub fn block1(&self) -> Result<Option<crate::Block>, crate::BlockError> {
                self.options.block1()
            }

            /// Sets (replaces) Block2; fails if `block` is out of range.
            pub fn set_block2(&mut self, block: crate::Block) -> Result<(), crate::BlockError> {
                self.options.set_block2(block)
            }

            /// Sets (replaces) Block1; fails if `block` is out of range.
            pub fn set_block1(&mut self, block: crate::Block) -> Result<(), crate::BlockError> {
                self.options.set_block1(block)
            }

            /// Content-Format, if present.
            pub fn content_format(&self) -> Option<u16> {
                self.options.content_format()
            }

            /// Sets Content-Format.
            pub fn set_content_format(&mut self, format: u16) {
                self.options.set_content_format(format)
            }

            /// Size2, if present.
            pub fn size2(&self) -> Option<u32> {
                self.options.size2()
            }

            /// Sets Size2.
            pub fn set_size2(&mut self, size: u32) {
                self.options.set_size2(size)
            }
        }
    };
}

pub(crate) use option_accessors;
