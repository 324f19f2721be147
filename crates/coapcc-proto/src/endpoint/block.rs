//! RFC 7959 Block2: slicing on the server side, and the client's rule for each block.

use core::ops::Range;

use crate::Block;

/// What part of a representation of `len` bytes a response carries.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Slice {
    /// The whole representation, without a Block2 option.
    Whole,
    /// One block: its Block2 value and the byte range it carries.
    Block(Block, Range<usize>),
    /// The requested block starts beyond the end of the representation.
    OutOfRange,
}

/// Block size of `szx` (0..=6).
pub(crate) fn size(szx: u8) -> usize {
    1usize << (usize::from(szx.min(6)) + 4)
}

/// Decide how to answer with a representation of `len` bytes.
///
/// - A request with Block2 `NUM/_/SZX` gets the block at byte offset `NUM · 2^(SZX+4)`, in
///   blocks of `min(SZX, max_szx)` (a server may answer with a smaller size than asked; the
///   block number is then rescaled, RFC 7959 §2.4).
/// - A request without Block2 gets the whole representation if it is at most
///   `max_unblocked` bytes, else block 0 of size `max_szx`.
pub(crate) fn slice(len: usize, requested: Option<Block>, max_szx: u8, max_unblocked: usize) -> Slice {
    let max_szx = max_szx.min(6);
    match requested {
        Some(b) => {
            let szx = b.szx.min(max_szx);
            let offset = (b.num as usize).saturating_mul(size(b.szx.min(6)));
            if offset > len || (offset == len && len > 0) {
                return Slice::OutOfRange;
            }
            let bs = size(szx);
            let num = (offset / bs) as u32;
            if num > Block::MAX_NUM {
                return Slice::OutOfRange;
            }
            let end = (offset + bs).min(len);
            Slice::Block(Block { num, more: end < len, szx }, offset..end)
        }
        None if len > max_unblocked => {
            let bs = size(max_szx);
            Slice::Block(Block { num: 0, more: len > bs, szx: max_szx }, 0..bs.min(len))
        }
        None => Slice::Whole,
    }
}

/// A client's rule for one Block2 block of a response (RFC 7959 §2.4), the same for the UDP
/// endpoint and the CoAP-over-TCP client of `coapcc-net`: the block `b` carrying
/// `payload_len` bytes continues a body of which `received` bytes arrived in `blocks` blocks
/// when it starts at the end of them, is exactly one block long unless it is the last (never
/// longer), keeps the body within `max_body` bytes, and, when more follow, within
/// `max_blocks` blocks and the largest block number.
pub fn accept_block2(
    received: usize,
    blocks: u32,
    b: Block,
    payload_len: usize,
    max_body: usize,
    max_blocks: u32,
) -> Result<(), super::FailReason> {
    use super::FailReason;
    let size = b.block_size();
    let offset = (b.num as usize).saturating_mul(size);
    if offset != received || (b.more && payload_len != size) || payload_len > size {
        return Err(FailReason::BadBlock);
    }
    if received + payload_len > max_body {
        return Err(FailReason::BodyTooLarge);
    }
    if b.more && blocks.saturating_add(1) >= max_blocks {
        return Err(FailReason::TooManyBlocks);
    }
    if b.more && b.num >= Block::MAX_NUM {
        return Err(FailReason::BadBlock);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn blk(num: u32, szx: u8) -> Option<Block> {
        Some(Block { num, more: false, szx })
    }

    #[test]
    fn slicing() {
        assert_eq!(slice(60, None, 6, 1024), Slice::Whole);
        assert_eq!(slice(2000, None, 6, 1024), Slice::Block(Block { num: 0, more: true, szx: 6 }, 0..1024));
        assert_eq!(
            slice(102_400, blk(399, 4), 6, 1024),
            Slice::Block(Block { num: 399, more: false, szx: 4 }, 102_144..102_400)
        );
        assert_eq!(slice(102_400, blk(400, 4), 6, 1024), Slice::OutOfRange);
        // Client asks for 1024-byte blocks, server allows 256: block 1 of 1024 = block 4 of 256.
        assert_eq!(slice(3000, blk(1, 6), 4, 1024), Slice::Block(Block { num: 4, more: true, szx: 4 }, 1024..1280));
        // Empty representation, block 0.
        assert_eq!(slice(0, blk(0, 2), 6, 1024), Slice::Block(Block { num: 0, more: false, szx: 2 }, 0..0));
        // A small representation asked block-wise: block 0 with M=0.
        assert_eq!(slice(10, blk(0, 4), 6, 1024), Slice::Block(Block { num: 0, more: false, szx: 4 }, 0..10));
    }
}
