//! The initial RTO of kernel TCP, set by a BPF `sock_ops` program.
//!
//! Linux's initial RTO (1 s, `TCP_TIMEOUT_INIT`) is no sysctl or route attribute; the only hook
//! is `BPF_SOCK_OPS_TIMEOUT_INIT`: a `sock_ops` program attached to a cgroup v2 answers, for
//! every socket of a process in that cgroup, the SYN (and SYN-ACK) timeout in jiffies, which is
//! also the connection's RTO until its first RTT sample. The program is six instructions,
//! written here as raw BPF bytecode and loaded with `bpf(2)`, so no BPF toolchain is needed:
//!
//! ```text
//! r2 = *(u32 *)(r1 + 0)      // ctx->op
//! if r2 != 1 goto +2         // BPF_SOCK_OPS_TIMEOUT_INIT
//! r3 = JIFFIES
//! *(u32 *)(r1 + 4) = r3      // ctx->reply
//! r0 = 1
//! exit
//! ```
//!
//! Each emulator gets its own cgroup `coapcc-emu-<pid>-<n>` under the cgroup v2 mount; the
//! commands it runs join it before they exec ([`InitRto::procs_fd`]), so the host's other
//! sockets are never affected. Dropping the [`InitRto`] detaches the program and removes the
//! cgroup, killing what still runs in it (a cgroup of a dead emulator is removed by the next
//! start).

use std::ffi::CString;
use std::fs::File;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::path::PathBuf;
use std::time::Duration;

use anyhow::{bail, Context, Result};

use crate::netns::{owner_pid, NETNS_PREFIX};
use crate::sys;

const BPF_PROG_LOAD: libc::c_long = 5;
const BPF_PROG_ATTACH: libc::c_long = 8;
const BPF_PROG_DETACH: libc::c_long = 9;
const BPF_PROG_TYPE_SOCK_OPS: u32 = 13;
const BPF_CGROUP_SOCK_OPS: u32 = 3;

/// The kernel's tick rates: the measured one is rounded to the nearest.
const HZ_CHOICES: [u32; 4] = [100, 250, 300, 1000];

fn insn(code: u8, dst: u8, src: u8, off: i16, imm: i32) -> u64 {
    let mut b = [0u8; 8];
    b[0] = code;
    b[1] = (src << 4) | dst;
    b[2..4].copy_from_slice(&off.to_le_bytes());
    b[4..8].copy_from_slice(&imm.to_le_bytes());
    u64::from_le_bytes(b)
}

/// The program's instructions for a timeout of `jiffies`.
pub fn program(jiffies: u32) -> Vec<u64> {
    vec![
        insn(0x61, 2, 1, 0, 0),              // ldxw r2, [r1 + 0]
        insn(0x55, 2, 0, 2, 1),              // jne r2, 1, +2
        insn(0xb7, 3, 0, 0, jiffies as i32), // mov r3, jiffies
        insn(0x63, 1, 3, 4, 0),              // stxw [r1 + 4], r3
        insn(0xb7, 0, 0, 0, 1),              // mov r0, 1
        insn(0x95, 0, 0, 0, 0),              // exit
    ]
}

fn bpf(cmd: libc::c_long, attr: &mut [u8; 128]) -> std::io::Result<i64> {
    // SAFETY: bpf(2) with a zeroed, 128-byte attribute union that outlives the call.
    let r = unsafe { libc::syscall(libc::SYS_bpf, cmd, attr.as_mut_ptr(), attr.len()) };
    if r < 0 {
        Err(std::io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Where the cgroup v2 hierarchy is mounted (`/sys/fs/cgroup` or `/sys/fs/cgroup/unified`).
pub fn cgroup2_root() -> Option<PathBuf> {
    let mounts = std::fs::read_to_string("/proc/self/mountinfo").ok()?;
    mounts.lines().find_map(|l| {
        let (pre, post) = l.split_once(" - ")?;
        if post.split_whitespace().next()? != "cgroup2" {
            return None;
        }
        pre.split_whitespace().nth(4).map(PathBuf::from)
    })
}

/// The kernel's tick rate (CONFIG_HZ), measured from `/proc/timer_list` (jiffies against the
/// monotonic clock over 200 ms) and rounded to the nearest of 100, 250, 300, 1000.
pub fn kernel_hz() -> Result<u32> {
    let read = || -> Result<(u64, u64)> {
        let t = std::fs::read_to_string("/proc/timer_list").context("/proc/timer_list")?;
        let now = t.lines().find_map(|l| l.strip_prefix("now at ")?.split_whitespace().next()?.parse().ok());
        let j = t.lines().find_map(|l| l.trim().strip_prefix("jiffies: ")?.trim().parse().ok());
        match (now, j) {
            (Some(n), Some(j)) => Ok((n, j)),
            _ => bail!("/proc/timer_list has no 'now at' or 'jiffies:' line"),
        }
    };
    let (n0, j0) = read()?;
    std::thread::sleep(Duration::from_millis(200));
    let (n1, j1) = read()?;
    if n1 <= n0 {
        bail!("/proc/timer_list: the clock did not advance");
    }
    let hz = (j1.wrapping_sub(j0)) as f64 / ((n1 - n0) as f64 * 1e-9);
    Ok(*HZ_CHOICES.iter().min_by(|a, b| (**a as f64 - hz).abs().total_cmp(&(**b as f64 - hz).abs())).expect("choices"))
}

/// A loaded and attached initial-RTO program and its cgroup.
#[derive(Debug)]
pub struct InitRto {
    dir: PathBuf,
    cgroup: OwnedFd,
    prog: OwnedFd,
    procs: OwnedFd,
    /// The kernel's tick rate used for the conversion.
    pub hz: u32,
    /// The timeout answered, jiffies.
    pub jiffies: u32,
}

impl InitRto {
    /// Create cgroup `name` under the cgroup v2 mount, load the program for `rto_ms` and
    /// attach it. Needs root, cgroup v2 and a kernel with CONFIG_CGROUP_BPF.
    pub fn install(name: &str, rto_ms: u32) -> Result<InitRto> {
        if !(1..=120_000).contains(&rto_ms) {
            bail!("initial RTO {rto_ms} ms must be in 1..=120000");
        }
        let root = cgroup2_root().context("no cgroup v2 hierarchy is mounted")?;
        let hz = kernel_hz()?;
        let jiffies = ((u64::from(rto_ms) * u64::from(hz)).div_ceil(1000)) as u32;
        let insns = program(jiffies);
        let license = CString::new("GPL").expect("no NUL");
        let mut log = vec![0u8; 4096];
        let mut attr = [0u8; 128];
        attr[0..4].copy_from_slice(&BPF_PROG_TYPE_SOCK_OPS.to_le_bytes());
        attr[4..8].copy_from_slice(&(insns.len() as u32).to_le_bytes());
        attr[8..16].copy_from_slice(&(insns.as_ptr() as u64).to_le_bytes());
        attr[16..24].copy_from_slice(&(license.as_ptr() as u64).to_le_bytes());
        attr[24..28].copy_from_slice(&1u32.to_le_bytes()); // log_level
        attr[28..32].copy_from_slice(&(log.len() as u32).to_le_bytes());
        attr[32..40].copy_from_slice(&(log.as_mut_ptr() as u64).to_le_bytes());
        let fd = bpf(BPF_PROG_LOAD, &mut attr).map_err(|e| {
            let msg = String::from_utf8_lossy(&log).trim_end_matches('\0').trim().to_string();
            anyhow::anyhow!("BPF_PROG_LOAD of the sock_ops program: {e} {msg}")
        })?;
        // SAFETY: bpf(2) returned a new descriptor that we own.
        let prog = unsafe { OwnedFd::from_raw_fd(fd as RawFd) };
        let dir = root.join(name);
        std::fs::create_dir(&dir).with_context(|| format!("cannot create cgroup {}", dir.display()))?;
        let cgroup: OwnedFd = match File::open(&dir) {
            Ok(f) => f.into(),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(e).context("cannot open the cgroup");
            }
        };
        let procs: OwnedFd = match std::fs::OpenOptions::new().write(true).open(dir.join("cgroup.procs")) {
            Ok(f) => f.into(),
            Err(e) => {
                let _ = std::fs::remove_dir(&dir);
                return Err(e).context("cannot open cgroup.procs");
            }
        };
        let mut attr = [0u8; 128];
        attr[0..4].copy_from_slice(&(cgroup.as_raw_fd() as u32).to_le_bytes());
        attr[4..8].copy_from_slice(&(prog.as_raw_fd() as u32).to_le_bytes());
        attr[8..12].copy_from_slice(&BPF_CGROUP_SOCK_OPS.to_le_bytes());
        if let Err(e) = bpf(BPF_PROG_ATTACH, &mut attr) {
            let _ = std::fs::remove_dir(&dir);
            bail!("BPF_PROG_ATTACH to {}: {e}", dir.display());
        }
        Ok(InitRto { dir, cgroup, prog, procs, hz, jiffies })
    }

    /// A descriptor of the cgroup's `cgroup.procs`: writing "0" to it moves the writing
    /// process into the cgroup (done in `pre_exec` by [`crate::Emulator::command`]).
    pub fn procs_fd(&self) -> RawFd {
        self.procs.as_raw_fd()
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> &std::path::Path {
        &self.dir
    }
}

impl Drop for InitRto {
    fn drop(&mut self) {
        let mut attr = [0u8; 128];
        attr[0..4].copy_from_slice(&(self.cgroup.as_raw_fd() as u32).to_le_bytes());
        attr[4..8].copy_from_slice(&(self.prog.as_raw_fd() as u32).to_le_bytes());
        attr[8..12].copy_from_slice(&BPF_CGROUP_SOCK_OPS.to_le_bytes());
        let _ = bpf(BPF_PROG_DETACH, &mut attr);
        // Commands still running when the emulator stops (their namespaces are about to go)
        // are killed, so that the cgroup can be removed: `cgroup.kill` (Linux >= 5.14) kills
        // every process in it. Then retry for up to 2 s while they exit.
        let _ = std::fs::write(self.dir.join("cgroup.kill"), "1");
        for _ in 0..20 {
            if std::fs::remove_dir(&self.dir).is_ok() || !self.dir.exists() {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
        eprintln!("coapcc emulate: warning: cgroup {} not removed (still in use)", self.dir.display());
    }
}

/// Remove the `coapcc-emu-<pid>-*` cgroups of dead emulators; returns their paths.
pub fn cleanup_stale() -> Vec<PathBuf> {
    let Some(root) = cgroup2_root() else { return Vec::new() };
    let Ok(dir) = std::fs::read_dir(&root) else { return Vec::new() };
    let mut removed = Vec::new();
    for e in dir.filter_map(|e| e.ok()) {
        let name = e.file_name().to_string_lossy().to_string();
        if name.starts_with(NETNS_PREFIX)
            && owner_pid(&name).is_some_and(|pid| !sys::pid_alive(pid))
            && std::fs::remove_dir(e.path()).is_ok()
        {
            removed.push(e.path());
        }
    }
    removed
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn program_encoding() {
        let p = program(500);
        assert_eq!(p.len(), 6);
        // mov r3, 500: opcode 0xb7, dst 3, imm 500.
        assert_eq!(p[2].to_le_bytes(), [0xb7, 0x03, 0, 0, 0xf4, 0x01, 0, 0]);
        // stxw [r1 + 4], r3: src 3 in the high nibble, dst 1 in the low one.
        assert_eq!(p[3].to_le_bytes(), [0x63, 0x31, 4, 0, 0, 0, 0, 0]);
        assert_eq!(p[5].to_le_bytes()[0], 0x95);
    }
}
