//! Named network namespaces (`ip netns`): creation, teardown on drop, and removal of the
//! leftovers of crashed runs.
//!
//! Names are `coapcc-emu-<pid>-<n>-c` (client side) and `coapcc-emu-<pid>-<n>-s` (server
//! side): the creating process's id and a per-process counter, so concurrent emulators never
//! collide and a namespace whose creator is dead is recognisably stale.

use std::process::{Command, Stdio};
use std::sync::atomic::{AtomicU32, Ordering};

use anyhow::{bail, Context, Result};

use crate::sys;

/// Prefix of every namespace the emulator creates.
pub const NETNS_PREFIX: &str = "coapcc-emu-";

/// Where `ip netns` mounts named namespaces.
pub const NETNS_DIR: &str = "/run/netns";

static COUNTER: AtomicU32 = AtomicU32::new(0);

/// Run `ip ARGS`; the error carries the command and its stderr.
pub fn ip(args: &[&str]) -> Result<()> {
    let out = Command::new("ip")
        .args(args)
        .stdin(Stdio::null())
        .output()
        .with_context(|| "cannot run `ip` (package iproute2)".to_string())?;
    if !out.status.success() {
        bail!("`ip {}` failed: {}", args.join(" "), String::from_utf8_lossy(&out.stderr).trim());
    }
    Ok(())
}

/// Names of the existing `coapcc-emu-*` namespaces.
pub fn list() -> Vec<String> {
    let Ok(dir) = std::fs::read_dir(NETNS_DIR) else { return Vec::new() };
    let mut v: Vec<String> = dir
        .filter_map(|e| e.ok())
        .filter_map(|e| e.file_name().into_string().ok())
        .filter(|n| n.starts_with(NETNS_PREFIX))
        .collect();
    v.sort();
    v
}

/// The creator's pid encoded in a namespace name, if it is one of ours.
pub fn owner_pid(name: &str) -> Option<i32> {
    name.strip_prefix(NETNS_PREFIX)?.split('-').next()?.parse().ok()
}

/// Delete every `coapcc-emu-<pid>-*` namespace whose creating process is gone (a crashed or
/// killed run). Returns the names removed. Namespaces of live processes are left alone.
pub fn cleanup_stale() -> Vec<String> {
    let mut removed = Vec::new();
    for name in list() {
        if owner_pid(&name).is_some_and(|pid| !sys::pid_alive(pid)) && ip(&["netns", "del", &name]).is_ok() {
            removed.push(name);
        }
    }
    removed
}

/// A client and a server namespace, deleted on drop.
#[derive(Debug)]
pub struct NetnsPair {
    /// Client-side namespace name.
    pub client: String,
    /// Server-side namespace name.
    pub server: String,
    created: Vec<String>,
}

impl NetnsPair {
    /// Create a fresh pair with loopback up in each.
    pub fn create() -> Result<NetnsPair> {
        let base = format!("{NETNS_PREFIX}{}-{}", std::process::id(), COUNTER.fetch_add(1, Ordering::Relaxed));
        let mut pair = NetnsPair { client: format!("{base}-c"), server: format!("{base}-s"), created: Vec::new() };
        for name in [pair.client.clone(), pair.server.clone()] {
            ip(&["netns", "add", &name])?;
            pair.created.push(name.clone());
            ip(&["-n", &name, "link", "set", "lo", "up"])?;
        }
        Ok(pair)
    }

    /// `/run/netns/NAME` of a namespace.
    pub fn path(name: &str) -> String {
        format!("{NETNS_DIR}/{name}")
    }

    /// Delete the namespaces now (idempotent). Returns the first error.
    pub fn teardown(&mut self) -> Result<()> {
        let mut first = None;
        for name in self.created.drain(..) {
            if let Err(e) = ip(&["netns", "del", &name]) {
                first.get_or_insert(e);
            }
        }
        first.map_or(Ok(()), Err)
    }
}

impl Drop for NetnsPair {
    fn drop(&mut self) {
        if let Err(e) = self.teardown() {
            eprintln!("coapcc emulate: warning: namespace teardown: {e:#}");
        }
    }
}

/// Write `value` to `/proc/sys/<key with dots as slashes>` inside namespace `name`.
pub fn sysctl(name: &str, key: &str, value: &str) -> Result<()> {
    let file = format!("/proc/sys/{}", key.replace('.', "/"));
    let (f2, v2) = (file.clone(), value.to_string());
    sys::in_netns(&NetnsPair::path(name), move || std::fs::write(&f2, v2.as_bytes()))
        .with_context(|| format!("sysctl {key}={value} in {name}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn owner_pids() {
        assert_eq!(owner_pid("coapcc-emu-1234-0-c"), Some(1234));
        assert_eq!(owner_pid("coapcc-emu-x-0-c"), None);
        assert_eq!(owner_pid("other-1-c"), None);
    }
}
