//! The few Linux system calls the emulator needs, behind safe wrappers. All `unsafe` of the
//! crate lives here.

use std::ffi::CString;
use std::fs::File;
use std::io;
use std::os::fd::{AsRawFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicI32, Ordering};
use std::time::Duration;

fn cvt(r: libc::c_int) -> io::Result<libc::c_int> {
    if r < 0 {
        Err(io::Error::last_os_error())
    } else {
        Ok(r)
    }
}

/// Open a new, non-persistent TUN device (`IFF_TUN | IFF_NO_PI`: whole IP packets, no
/// header) named after `pattern` (`%d` is filled in by the kernel). Returns the descriptor
/// (non-blocking, close-on-exec) and the device's name. The device disappears when the
/// descriptor is closed, whatever namespace it was moved to.
pub fn open_tun(pattern: &str) -> io::Result<(OwnedFd, String)> {
    #[repr(C)]
    struct IfReq {
        name: [u8; libc::IFNAMSIZ],
        flags: libc::c_short,
        _pad: [u8; 22],
    }
    const TUNSETIFF: libc::c_ulong = 0x4004_54ca;
    let path = CString::new("/dev/net/tun").expect("no NUL");
    // SAFETY: plain open(2) of a NUL-terminated path.
    let fd = cvt(unsafe { libc::open(path.as_ptr(), libc::O_RDWR | libc::O_CLOEXEC | libc::O_NONBLOCK) })?;
    // SAFETY: fd was just returned by open and is owned by nobody else.
    let fd = unsafe { OwnedFd::from_raw_fd(fd) };
    let mut req =
        IfReq { name: [0; libc::IFNAMSIZ], flags: (libc::IFF_TUN | libc::IFF_NO_PI) as libc::c_short, _pad: [0; 22] };
    let n = pattern.len().min(libc::IFNAMSIZ - 1);
    req.name[..n].copy_from_slice(&pattern.as_bytes()[..n]);
    // SAFETY: TUNSETIFF reads and writes a struct ifreq, which IfReq lays out (40 bytes).
    cvt(unsafe { libc::ioctl(fd.as_raw_fd(), TUNSETIFF as _, &mut req as *mut IfReq) })?;
    let len = req.name.iter().position(|&b| b == 0).unwrap_or(libc::IFNAMSIZ);
    Ok((fd, String::from_utf8_lossy(&req.name[..len]).into_owned()))
}

/// A non-blocking, close-on-exec eventfd (used to wake and stop forwarder threads).
pub fn eventfd() -> io::Result<OwnedFd> {
    // SAFETY: eventfd(2) with valid flags; the result is a fresh descriptor.
    let fd = cvt(unsafe { libc::eventfd(0, libc::EFD_CLOEXEC | libc::EFD_NONBLOCK) })?;
    // SAFETY: fresh descriptor owned by nobody else.
    Ok(unsafe { OwnedFd::from_raw_fd(fd) })
}

/// Signal an eventfd.
pub fn eventfd_signal(fd: RawFd) {
    let one: u64 = 1;
    // SAFETY: writes 8 bytes from a valid u64 to a descriptor the caller keeps open.
    unsafe { libc::write(fd, &one as *const u64 as *const libc::c_void, 8) };
}

/// Read one packet (non-blocking). `Ok(None)` when nothing is pending.
pub fn read_nb(fd: RawFd, buf: &mut [u8]) -> io::Result<Option<usize>> {
    // SAFETY: reads at most buf.len() bytes into buf.
    let n = unsafe { libc::read(fd, buf.as_mut_ptr() as *mut libc::c_void, buf.len()) };
    if n < 0 {
        let e = io::Error::last_os_error();
        if e.kind() == io::ErrorKind::WouldBlock || e.raw_os_error() == Some(libc::EINTR) {
            return Ok(None);
        }
        return Err(e);
    }
    Ok(Some(n as usize))
}

/// Write one whole packet.
pub fn write_packet(fd: RawFd, pkt: &[u8]) -> io::Result<()> {
    // SAFETY: writes pkt.len() bytes from pkt.
    let n = unsafe { libc::write(fd, pkt.as_ptr() as *const libc::c_void, pkt.len()) };
    if n < 0 {
        return Err(io::Error::last_os_error());
    }
    Ok(())
}

/// Wait until one of `fds` is readable or `timeout` passed (`None`: forever), with
/// nanosecond resolution (`ppoll(2)`, hrtimer-based). Returns a readiness flag per fd.
pub fn ppoll_readable(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<[bool; 4]> {
    let mut pfds = [libc::pollfd { fd: -1, events: 0, revents: 0 }; 4];
    for (p, &fd) in pfds.iter_mut().zip(fds) {
        p.fd = fd;
        p.events = libc::POLLIN;
    }
    let ts = timeout.map(|d| libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as _ });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: pfds holds fds.len() <= 4 valid entries; tsp is null or points to a timespec.
    let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), fds.len().min(4) as libc::nfds_t, tsp, std::ptr::null()) };
    let mut out = [false; 4];
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(out);
        }
        return Err(e);
    }
    for (o, p) in out.iter_mut().zip(&pfds) {
        *o = p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0;
    }
    Ok(out)
}

/// Tune the calling thread for timer precision: 1 ns timer slack (default 50 µs) and, if
/// `realtime`, SCHED_FIFO priority 10 (falls back silently when not permitted). Returns
/// whether the real-time policy is in force.
pub fn tune_thread(realtime: bool) -> bool {
    // SAFETY: prctl(PR_SET_TIMERSLACK) takes an integer argument.
    unsafe { libc::prctl(libc::PR_SET_TIMERSLACK, 1 as libc::c_ulong, 0, 0, 0) };
    if !realtime {
        return false;
    }
    let param = libc::sched_param { sched_priority: 10 };
    // SAFETY: sets this thread's policy with a valid sched_param.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
}

/// Run `f` on a fresh thread that first enters the network namespace mounted at `path`
/// (`/run/netns/NAME`). The thread ends with `f`, so no other code runs in that namespace.
pub fn in_netns<T: Send + 'static>(path: &str, f: impl FnOnce() -> io::Result<T> + Send + 'static) -> io::Result<T> {
    let path = path.to_string();
    std::thread::spawn(move || {
        let ns = File::open(&path)?;
        // SAFETY: setns(2) on an open namespace descriptor; affects only this thread.
        cvt(unsafe { libc::setns(ns.as_raw_fd(), libc::CLONE_NEWNET) })?;
        f()
    })
    .join()
    .map_err(|_| io::Error::other("namespace thread panicked"))?
}

/// Is process `pid` alive (it exists, even as a zombie)?
pub fn pid_alive(pid: i32) -> bool {
    if pid <= 0 {
        return false;
    }
    // SAFETY: kill with signal 0 only checks for existence.
    let r = unsafe { libc::kill(pid, 0) };
    r == 0 || io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

/// Send `sig` to the process group `pgid` (ignoring errors: it may be gone).
pub fn kill_group(pgid: i32, sig: libc::c_int) {
    if pgid > 0 {
        // SAFETY: kill(2) on a negative pid targets a process group.
        unsafe { libc::kill(-pgid, sig) };
    }
}

/// Make the calling process receive SIGKILL when its parent dies. For `pre_exec`.
pub fn set_parent_death_signal() -> io::Result<()> {
    // SAFETY: async-signal-safe prctl call.
    cvt(unsafe { libc::prctl(libc::PR_SET_PDEATHSIG, libc::SIGKILL as libc::c_ulong, 0, 0, 0) }).map(|_| ())
}

/// The last termination signal received by the handler of [`install_signal_handlers`]
/// (0: none).
static SIGNALLED: AtomicI32 = AtomicI32::new(0);

extern "C" fn on_signal(sig: libc::c_int) {
    SIGNALLED.store(sig, Ordering::SeqCst);
}

/// Previously installed actions, restored by [`SignalGuard`]'s drop.
pub struct SignalGuard {
    old: Vec<(libc::c_int, libc::sigaction)>,
}

/// Catch SIGINT, SIGTERM and SIGHUP: they only set a flag ([`signalled`]), so the caller can
/// tear down in order. The previous actions come back when the guard is dropped.
pub fn install_signal_handlers() -> SignalGuard {
    SIGNALLED.store(0, Ordering::SeqCst);
    let mut old = Vec::new();
    for sig in [libc::SIGINT, libc::SIGTERM, libc::SIGHUP] {
        // SAFETY: sigaction with a zeroed struct, an async-signal-safe handler (one atomic
        // store) and an empty mask; the old action is saved for restoration.
        unsafe {
            let mut sa: libc::sigaction = std::mem::zeroed();
            sa.sa_sigaction = on_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut sa.sa_mask);
            let mut prev: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(sig, &sa, &mut prev) == 0 {
                old.push((sig, prev));
            }
        }
    }
    SignalGuard { old }
}

impl Drop for SignalGuard {
    fn drop(&mut self) {
        for (sig, prev) in &self.old {
            // SAFETY: restores an action previously returned by sigaction.
            unsafe { libc::sigaction(*sig, prev, std::ptr::null_mut()) };
        }
    }
}

/// The termination signal caught since [`install_signal_handlers`], if any.
pub fn signalled() -> Option<i32> {
    match SIGNALLED.load(Ordering::SeqCst) {
        0 => None,
        s => Some(s),
    }
}

/// The effective user id.
pub fn euid() -> u32 {
    // SAFETY: geteuid(2) cannot fail and has no preconditions.
    unsafe { libc::geteuid() }
}

/// Spawn `cmd` as the leader of a new process group (so the whole group can be signalled)
/// that is killed if this process dies.
pub fn spawn_group(cmd: &mut std::process::Command) -> io::Result<std::process::Child> {
    use std::os::unix::process::CommandExt;
    cmd.process_group(0);
    // SAFETY: the closure only calls prctl, which is async-signal-safe.
    unsafe { cmd.pre_exec(set_parent_death_signal) };
    cmd.spawn()
}

/// `poll(2)` for readability on many descriptors with a nanosecond timeout (`ppoll`).
/// Returns one readiness flag per descriptor.
pub fn poll_many(fds: &[RawFd], timeout: Option<Duration>) -> io::Result<Vec<bool>> {
    let mut pfds: Vec<libc::pollfd> =
        fds.iter().map(|&fd| libc::pollfd { fd, events: libc::POLLIN, revents: 0 }).collect();
    let ts = timeout.map(|d| libc::timespec { tv_sec: d.as_secs() as libc::time_t, tv_nsec: d.subsec_nanos() as _ });
    let tsp = ts.as_ref().map_or(std::ptr::null(), |t| t as *const libc::timespec);
    // SAFETY: pfds is a valid array of pfds.len() entries; tsp is null or a valid timespec.
    let r = unsafe { libc::ppoll(pfds.as_mut_ptr(), pfds.len() as libc::nfds_t, tsp, std::ptr::null()) };
    if r < 0 {
        let e = io::Error::last_os_error();
        if e.raw_os_error() == Some(libc::EINTR) {
            return Ok(vec![false; fds.len()]);
        }
        return Err(e);
    }
    Ok(pfds.iter().map(|p| p.revents & (libc::POLLIN | libc::POLLERR | libc::POLLHUP) != 0).collect())
}

/// Put the calling thread under SCHED_FIFO at `prio` (threads it creates later inherit it).
pub fn set_process_fifo(prio: i32) -> bool {
    let param = libc::sched_param { sched_priority: prio };
    // SAFETY: sets this thread's policy with a valid sched_param.
    unsafe { libc::pthread_setschedparam(libc::pthread_self(), libc::SCHED_FIFO, &param) == 0 }
}

/// CLOCK_MONOTONIC in nanoseconds (the clock `std::time::Instant` uses on Linux, shared by
/// every process and namespace of the machine).
pub fn monotonic_ns() -> u64 {
    let mut ts = libc::timespec { tv_sec: 0, tv_nsec: 0 };
    // SAFETY: clock_gettime writes one timespec.
    unsafe { libc::clock_gettime(libc::CLOCK_MONOTONIC, &mut ts) };
    ts.tv_sec as u64 * 1_000_000_000 + ts.tv_nsec as u64
}
