//! Device memory opened in another process (docs/src/ipc.md). Two kinds of handle:
//!
//! - `cuMemAlloc` memory (pool chunks, the cuda resource): the driver's own IPC handle
//!   (`cuIpcGetMemHandle`) of the allocation that holds the block, and the block's offset in it.
//! - Virtual memory (the shareable expandable resource): each page is its own physical
//!   allocation, exported as a POSIX file descriptor. A descriptor cannot travel in bytes, so
//!   the exporter keeps them open and writes their numbers into a *ticket*, a small memory file
//!   it also keeps open; the handle names the exporter's pid and the ticket's descriptor, and
//!   the opener takes the descriptors out of the exporter with `pidfd_getfd` (Linux 5.6; the
//!   kernel allows it to processes that may ptrace the exporter: the same user, under Yama's
//!   default scope a descendant or a process the exporter allowed, see docs/src/ipc.md). No
//!   socket or file in the file system is involved: the handle reaches only the processes the
//!   program hands it to, and no other process can use it unless the kernel would also let it
//!   read the exporter's memory.
//!
//! The ticket is shared memory between the exporter and every opener: a state (live until the
//! exporter frees the block), a nonce the handle repeats (so a descriptor number reused for
//! something else is not mistaken for the ticket) and one slot per opener holding its pid, so
//! that the exporter keeps a freed block out of its pool while any live process has it open.

use super::{backend, PhysicalMemory};
use crate::error::{Error, Result};
use parking_lot::Mutex;
use std::collections::BTreeMap;
use std::os::fd::{AsFd, AsRawFd, BorrowedFd, FromRawFd, OwnedFd, RawFd};
use std::sync::atomic::{AtomicU32, Ordering};

/// Bytes of an `rmmIpcMemHandle_t`.
pub(crate) const HANDLE_SIZE: usize = 128;

const HANDLE_MAGIC: &[u8; 4] = b"RMMH";
const HANDLE_VERSION: u8 = 1;
const KIND_DRIVER: u8 = 1;
const KIND_PAGES: u8 = 2;

const TICKET_MAGIC: u64 = u64::from_le_bytes(*b"RMMTICKT");
const LIVE: u32 = 1;
const FREED: u32 = 2;
/// Processes that can have one block open at once.
pub(crate) const OPENERS: usize = 64;
// The ticket's layout: magic, nonce, state, page count, page size, then the opener slots
// (pids) and the exporter's page descriptors.
const AT_MAGIC: usize = 0;
const AT_NONCE: usize = 8;
const AT_STATE: usize = 16;
const AT_PAGES: usize = 20;
const AT_PAGE_SIZE: usize = 24;
const AT_SLOTS: usize = 64;
const AT_FDS: usize = AT_SLOTS + 4 * OPENERS;

fn os_error(call: &str) -> Error {
    Error::Internal(format!("{call}: {}", std::io::Error::last_os_error()))
}

/// A shared mapping of a ticket's memory file, read and written through atomics only (the
/// other side writes it concurrently).
struct SharedView {
    at: usize,
    len: usize,
}

// SAFETY: the mapping is plain shared memory, touched only through atomics and plain reads of
// fields the exporter wrote before any handle named the ticket.
unsafe impl Send for SharedView {}
// SAFETY: as above.
unsafe impl Sync for SharedView {}

impl SharedView {
    fn map(fd: BorrowedFd<'_>, len: usize) -> Result<SharedView> {
        // SAFETY: a fresh shared mapping of a memory file at least `len` bytes long (callers
        // size or check it), at an address the kernel picks.
        let at = unsafe { libc::mmap(std::ptr::null_mut(), len, libc::PROT_READ | libc::PROT_WRITE, libc::MAP_SHARED, fd.as_raw_fd(), 0) };
        if at == libc::MAP_FAILED {
            return Err(os_error("mmap of an IPC ticket"));
        }
        Ok(SharedView { at: at as usize, len })
    }

    fn u32_at(&self, offset: usize) -> &AtomicU32 {
        assert!(offset + 4 <= self.len && offset.is_multiple_of(4));
        // SAFETY: in bounds and aligned (checked above; the mapping is page-aligned), and the
        // mapping lives as long as `self`.
        unsafe { &*((self.at + offset) as *const AtomicU32) }
    }

    fn u64_at(&self, offset: usize) -> u64 {
        u64::from(self.u32_at(offset).load(Ordering::Acquire)) | u64::from(self.u32_at(offset + 4).load(Ordering::Acquire)) << 32
    }

    fn set_u64(&self, offset: usize, value: u64) {
        self.u32_at(offset).store(value as u32, Ordering::Release);
        self.u32_at(offset + 4).store((value >> 32) as u32, Ordering::Release);
    }
}

impl Drop for SharedView {
    fn drop(&mut self) {
        // SAFETY: unmaps the mapping `map` made, once.
        unsafe { libc::munmap(self.at as *mut libc::c_void, self.len) };
    }
}

/// The exporter's record of one exported block: its pages' descriptors and the ticket that
/// names them. Dropping it closes them all; memory already opened elsewhere stays mapped
/// there (each opener holds its own reference to the physical memory).
pub struct Ticket {
    memfd: OwnedFd,
    view: SharedView,
    nonce: u64,
    uuid: [u8; 16],
    offset: usize,
    size: usize,
    _pages: Vec<OwnedFd>,
}

fn random_nonce() -> u64 {
    let mut bytes = [0u8; 8];
    // SAFETY: getrandom writes at most `bytes.len()` bytes into the buffer we own.
    let got = unsafe { libc::getrandom(bytes.as_mut_ptr() as *mut libc::c_void, bytes.len(), 0) };
    if got != bytes.len() as isize {
        // Uniqueness, not secrecy, is what the nonce is for: time and pid will do.
        let now = std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).map_or(0, |d| d.as_nanos() as u64);
        return now ^ (u64::from(std::process::id()) << 40);
    }
    u64::from_le_bytes(bytes)
}

impl Ticket {
    /// A ticket for a block `size` bytes long at `offset` into the first of `pages` (each
    /// `page` bytes of device `uuid`).
    pub fn new(uuid: [u8; 16], page: usize, offset: usize, size: usize, pages: Vec<OwnedFd>) -> Result<Ticket> {
        let len = (AT_FDS + 4 * pages.len()).next_multiple_of(4096);
        // SAFETY: the name is a NUL-terminated literal.
        let fd = unsafe { libc::memfd_create(c"rmm-ipc-ticket".as_ptr(), libc::MFD_CLOEXEC) };
        if fd < 0 {
            return Err(os_error("memfd_create"));
        }
        // SAFETY: `fd` was just opened for us and nothing else owns it.
        let memfd = unsafe { OwnedFd::from_raw_fd(fd) };
        // SAFETY: `memfd` is an open memory file.
        if unsafe { libc::ftruncate(memfd.as_raw_fd(), len as libc::off_t) } != 0 {
            return Err(os_error("ftruncate"));
        }
        let view = SharedView::map(memfd.as_fd(), len)?;
        let nonce = random_nonce();
        view.set_u64(AT_MAGIC, TICKET_MAGIC);
        view.set_u64(AT_NONCE, nonce);
        view.u32_at(AT_PAGES).store(pages.len() as u32, Ordering::Release);
        view.set_u64(AT_PAGE_SIZE, page as u64);
        for (at, fd) in pages.iter().enumerate() {
            view.u32_at(AT_FDS + 4 * at).store(fd.as_raw_fd() as u32, Ordering::Release);
        }
        view.u32_at(AT_STATE).store(LIVE, Ordering::SeqCst);
        Ok(Ticket { memfd, view, nonce, uuid, offset, size, _pages: pages })
    }

    /// The handle another process opens the block with.
    pub fn handle(&self) -> [u8; HANDLE_SIZE] {
        let mut handle = header(KIND_PAGES, self.uuid, self.offset, self.size);
        handle[40..44].copy_from_slice(&std::process::id().to_le_bytes());
        handle[44..48].copy_from_slice(&self.memfd.as_raw_fd().to_le_bytes());
        handle[48..56].copy_from_slice(&self.nonce.to_le_bytes());
        handle
    }

    /// No process can open the block from now on (it was freed here).
    pub fn revoke(&self) {
        self.view.u32_at(AT_STATE).store(FREED, Ordering::SeqCst);
    }

    /// The live processes that have the block open (this one included, if it opened its own
    /// handle). A slot of a process that exited without closing is cleared here.
    pub fn opened(&self) -> usize {
        let mut count = 0;
        for slot in 0..OPENERS {
            let cell = self.view.u32_at(AT_SLOTS + 4 * slot);
            let pid = cell.load(Ordering::SeqCst);
            if pid == 0 {
                continue;
            }
            if process_alive(pid) {
                count += 1;
            } else {
                let _ = cell.compare_exchange(pid, 0, Ordering::SeqCst, Ordering::SeqCst);
            }
        }
        count
    }
}

fn process_alive(pid: u32) -> bool {
    // SAFETY: signal 0 only checks that the process exists and may be signalled.
    let answer = unsafe { libc::kill(pid as libc::pid_t, 0) };
    answer == 0 || std::io::Error::last_os_error().raw_os_error() == Some(libc::EPERM)
}

fn header(kind: u8, uuid: [u8; 16], offset: usize, size: usize) -> [u8; HANDLE_SIZE] {
    let mut handle = [0u8; HANDLE_SIZE];
    handle[..4].copy_from_slice(HANDLE_MAGIC);
    handle[4] = HANDLE_VERSION;
    handle[5] = kind;
    handle[8..24].copy_from_slice(&uuid);
    handle[24..32].copy_from_slice(&(offset as u64).to_le_bytes());
    handle[32..40].copy_from_slice(&(size as u64).to_le_bytes());
    handle
}

/// The handle of a block `size` bytes long at `ptr`, inside the `cuMemAlloc` allocation that
/// starts at `base`, of `device`.
pub fn driver_handle(device: i32, base: usize, ptr: usize, size: usize) -> Result<[u8; HANDLE_SIZE]> {
    let platform = backend()?;
    let driver = platform.ipc_get_mem_handle(device, base)?;
    let mut handle = header(KIND_DRIVER, platform.device_uuid(device)?, ptr - base, size);
    handle[40..104].copy_from_slice(&driver);
    Ok(handle)
}

fn read_u64(handle: &[u8; HANDLE_SIZE], at: usize) -> u64 {
    u64::from_le_bytes(handle[at..at + 8].try_into().expect("8 bytes"))
}

fn read_u32(handle: &[u8; HANDLE_SIZE], at: usize) -> u32 {
    u32::from_le_bytes(handle[at..at + 4].try_into().expect("4 bytes"))
}

/// What `open` mapped, by the address it answered.
enum Opened {
    Driver {
        device: i32,
        base: usize,
        count: usize,
    },
    Pages {
        reservation: usize,
        page: usize,
        pages: usize,
        view: SharedView,
        slot: usize,
    },
    /// Pages named by descriptor numbers alone (`open_descriptors`): no ticket.
    Descriptors {
        reservation: usize,
        page: usize,
        pages: usize,
    },
}

static OPENED: Mutex<BTreeMap<usize, Opened>> = Mutex::new(BTreeMap::new());

/// The size of the block a handle names.
pub fn handle_size(handle: &[u8; HANDLE_SIZE]) -> Result<usize> {
    check_header(handle)?;
    Ok(read_u64(handle, 32) as usize)
}

fn check_header(handle: &[u8; HANDLE_SIZE]) -> Result<u8> {
    if &handle[..4] != HANDLE_MAGIC || handle[4] != HANDLE_VERSION || !matches!(handle[5], KIND_DRIVER | KIND_PAGES) {
        return Err(Error::invalid("not an rmm IPC handle (rmmIpcGetMemHandle makes them), or one of another rmm version"));
    }
    Ok(handle[5])
}

/// The device of this process whose UUID the handle names, which `device` must be or reach.
fn owner_device(handle: &[u8; HANDLE_SIZE], device: i32) -> Result<i32> {
    let platform = backend()?;
    let uuid: [u8; 16] = handle[8..24].try_into().expect("16 bytes");
    let mut owner = None;
    for candidate in 0..platform.device_count()? {
        if platform.device_uuid(candidate)? == uuid {
            owner = Some(candidate);
            break;
        }
    }
    let hex: String = uuid.iter().map(|byte| format!("{byte:02x}")).collect();
    let owner = owner.ok_or_else(|| Error::invalid(format!("the memory is on device {hex}, which this process does not see")))?;
    if !platform.can_access_peer(device, owner)? {
        return Err(Error::invalid(format!(
            "the memory is on device {owner}, which device {device} cannot reach (no peer access): open it with device {owner} current"
        )));
    }
    Ok(owner)
}

/// Maps the block a handle names into this process for `device` (which must hold it or
/// reach its device); its address here, until `close`.
pub fn open(handle: &[u8; HANDLE_SIZE], device: i32) -> Result<usize> {
    let kind = check_header(handle)?;
    let owner = owner_device(handle, device)?;
    let offset = read_u64(handle, 24) as usize;
    match kind {
        KIND_DRIVER => {
            let driver: [u8; 64] = handle[40..104].try_into().expect("64 bytes");
            let base = backend()?.ipc_open_mem_handle(device, &driver)?;
            let mut opened = OPENED.lock();
            // The driver answers the same address for a handle this process already opened.
            match opened.get_mut(&(base + offset)) {
                Some(Opened::Driver { count, .. }) => *count += 1,
                _ => {
                    opened.insert(base + offset, Opened::Driver { device, base, count: 1 });
                }
            }
            Ok(base + offset)
        }
        _ => open_pages(handle, owner, device, offset),
    }
}

fn open_pages(handle: &[u8; HANDLE_SIZE], owner: i32, device: i32, offset: usize) -> Result<usize> {
    let pid = read_u32(handle, 40);
    let ticket_fd = read_u32(handle, 44) as RawFd;
    let nonce = read_u64(handle, 48);
    let exporter = Exporter::open(pid)?;
    let freed = || Error::invalid(format!("the allocation was freed by process {pid} that exported it"));
    let ticket = exporter.take(ticket_fd).map_err(|e| match e {
        Taken::Closed => freed(),
        Taken::Other(e) => e,
    })?;
    // SAFETY: fstat writes only into the stat we own (all-zero is a valid stat).
    let mut stat: libc::stat = unsafe { std::mem::zeroed() };
    // SAFETY: as above; the descriptor is open.
    if unsafe { libc::fstat(ticket.as_raw_fd(), &mut stat) } != 0 {
        return Err(os_error("fstat"));
    }
    let len = stat.st_size as usize;
    if len < AT_FDS || !len.is_multiple_of(4096) || stat.st_mode & libc::S_IFMT != libc::S_IFREG {
        return Err(freed());
    }
    let view = SharedView::map(ticket.as_fd(), len)?;
    if view.u64_at(AT_MAGIC) != TICKET_MAGIC || view.u64_at(AT_NONCE) != nonce {
        // The descriptor number now names something else: the ticket was closed.
        return Err(freed());
    }
    let pages = view.u32_at(AT_PAGES).load(Ordering::Acquire) as usize;
    let page = view.u64_at(AT_PAGE_SIZE) as usize;
    if AT_FDS + 4 * pages > len || pages == 0 || page == 0 {
        return Err(Error::invalid("the IPC ticket is malformed"));
    }
    let slot = claim_slot(&view)?;
    // Claimed before the state is read, and the exporter revokes before it counts openers:
    // either it sees this slot and keeps the block, or this sees the block freed.
    if view.u32_at(AT_STATE).load(Ordering::SeqCst) != LIVE {
        view.u32_at(AT_SLOTS + 4 * slot).store(0, Ordering::SeqCst);
        return Err(freed());
    }
    let fds: Vec<RawFd> = (0..pages).map(|at| view.u32_at(AT_FDS + 4 * at).load(Ordering::Acquire) as RawFd).collect();
    match map_pages(&exporter, &fds, page, owner, device) {
        Ok(reservation) => {
            let at = reservation + offset;
            OPENED.lock().insert(at, Opened::Pages { reservation, page, pages, view, slot });
            Ok(at)
        }
        Err(e) => {
            view.u32_at(AT_SLOTS + 4 * slot).store(0, Ordering::SeqCst);
            Err(e)
        }
    }
}

/// Maps the pages that process `pid` exported as the descriptors numbered `fds` there, each
/// `page` bytes, one after the other into an address range of this process, with access for
/// `device` (whose memory they must be, or which must reach it); the first page's address
/// here, until `close`. This is how PyTorch's expandable segments travel (docs/src/ipc.md):
/// unlike a handle of `Ticket`, nothing says whether the exporter still holds the memory for
/// the block it was shared for; keeping it allocated meanwhile is the exporter's part.
pub fn open_descriptors(pid: u32, page: usize, fds: &[RawFd], device: i32) -> Result<usize> {
    let platform = backend()?;
    let granularity = platform.vmm_granularity(device)?;
    if fds.is_empty() {
        return Err(Error::invalid("no page descriptors (count is 0)"));
    }
    if page == 0 || !page.is_multiple_of(granularity) {
        return Err(Error::invalid(format!(
            "a page size of {page} bytes is not a multiple of device {device}'s mapping granularity, {granularity}"
        )));
    }
    if fds.len().checked_mul(page).is_none() {
        return Err(Error::invalid(format!("{} pages of {page} bytes do not fit in the address space", fds.len())));
    }
    if let Some(fd) = fds.iter().find(|&&fd| fd < 0) {
        return Err(Error::invalid(format!("{fd} is not a descriptor number")));
    }
    let exporter = Exporter::open(pid)?;
    let reservation = map_pages(&exporter, fds, page, device, device)?;
    OPENED.lock().insert(reservation, Opened::Descriptors { reservation, page, pages: fds.len() });
    Ok(reservation)
}

fn claim_slot(view: &SharedView) -> Result<usize> {
    let pid = std::process::id();
    for slot in 0..OPENERS {
        if view.u32_at(AT_SLOTS + 4 * slot).compare_exchange(0, pid, Ordering::SeqCst, Ordering::SeqCst).is_ok() {
            return Ok(slot);
        }
    }
    Err(Error::invalid(format!("{OPENERS} processes have the allocation open: close it somewhere first")))
}

/// Reserves address space for `fds.len()` pages and maps each page's physical memory into it
/// with access for `owner` and `device`; the reservation.
fn map_pages(exporter: &Exporter, fds: &[RawFd], page: usize, owner: i32, device: i32) -> Result<usize> {
    let platform = backend()?;
    let reservation = platform.vmm_reserve(fds.len() * page)?;
    let mut mapped = 0;
    let result = (|| -> Result<()> {
        for &fd in fds {
            let own = exporter.take(fd).map_err(|e| match e {
                Taken::Closed => Error::invalid("the allocation was freed by the process that exported it"),
                Taken::Other(e) => e,
            })?;
            let physical: PhysicalMemory = platform.vmm_import(own.as_fd(), owner)?;
            let at = reservation + mapped * page;
            let map = platform.vmm_map(at, page, physical);
            // Mapped, the memory stays alive without this handle; unmapped, it is released.
            let released = platform.vmm_release(physical);
            map?;
            mapped += 1;
            released?;
        }
        let mut access = vec![owner];
        if device != owner {
            access.push(device);
        }
        platform.vmm_set_access(reservation, fds.len() * page, &access)
    })();
    if let Err(e) = result {
        for at in 0..mapped {
            let _ = platform.vmm_unmap(reservation + at * page, page);
        }
        let _ = platform.vmm_free_reservation(reservation, fds.len() * page);
        return Err(e);
    }
    Ok(reservation)
}

/// Unmaps what `open` mapped at `ptr`. The caller has finished every use of it (synchronized
/// the streams that used it), as with `cudaIpcCloseMemHandle`.
pub fn close(ptr: usize) -> Result<()> {
    let mut opened = OPENED.lock();
    let Some(entry) = opened.get_mut(&ptr) else {
        return Err(Error::invalid(format!("{ptr:#x} was not opened from an IPC handle (or is closed already)")));
    };
    let platform = backend()?;
    match entry {
        Opened::Driver { count, .. } if *count > 1 => {
            *count -= 1;
            Ok(())
        }
        Opened::Driver { device, base, .. } => {
            let (device, base) = (*device, *base);
            platform.ipc_close_mem_handle(device, base)?;
            opened.remove(&ptr);
            Ok(())
        }
        Opened::Pages { reservation, page, pages, view, slot } => {
            unmap_pages(*reservation, *page, *pages)?;
            view.u32_at(AT_SLOTS + 4 * *slot).store(0, Ordering::SeqCst);
            opened.remove(&ptr);
            Ok(())
        }
        Opened::Descriptors { reservation, page, pages } => {
            unmap_pages(*reservation, *page, *pages)?;
            opened.remove(&ptr);
            Ok(())
        }
    }
}

/// Unmaps what `map_pages` mapped and frees its address range.
fn unmap_pages(reservation: usize, page: usize, pages: usize) -> Result<()> {
    let platform = backend()?;
    for at in 0..pages {
        platform.vmm_unmap(reservation + at * page, page)?;
    }
    platform.vmm_free_reservation(reservation, pages * page)
}

/// The exporting process, as a pidfd.
struct Exporter {
    pid: u32,
    pidfd: OwnedFd,
}

enum Taken {
    /// The exporter has no such descriptor (it closed it).
    Closed,
    Other(Error),
}

impl Exporter {
    fn open(pid: u32) -> Result<Exporter> {
        // SAFETY: pidfd_open takes a pid and flags and returns a new descriptor or -1.
        let fd = unsafe { libc::syscall(libc::SYS_pidfd_open, pid as libc::pid_t, 0) };
        if fd < 0 {
            let error = std::io::Error::last_os_error();
            return Err(match error.raw_os_error() {
                Some(libc::ESRCH) => Error::invalid(format!("process {pid} that exported the allocation has exited")),
                Some(libc::ENOSYS) => {
                    Error::NotSupported("this kernel has no pidfd_open (Linux 5.3; IPC of virtual memory needs 5.6)".into())
                }
                _ => Error::Internal(format!("pidfd_open({pid}): {error}")),
            });
        }
        // SAFETY: the kernel just opened `fd` for us.
        Ok(Exporter { pid, pidfd: unsafe { OwnedFd::from_raw_fd(fd as RawFd) } })
    }

    /// A copy of the exporter's descriptor `fd`.
    fn take(&self, fd: RawFd) -> std::result::Result<OwnedFd, Taken> {
        // SAFETY: pidfd_getfd takes a pidfd, a descriptor number and flags and returns a new
        // descriptor (close-on-exec) or -1.
        let own = unsafe { libc::syscall(libc::SYS_pidfd_getfd, self.pidfd.as_raw_fd(), fd, 0) };
        if own < 0 {
            let error = std::io::Error::last_os_error();
            let pid = self.pid;
            return Err(match error.raw_os_error() {
                Some(libc::EBADF) => Taken::Closed,
                Some(libc::ESRCH) => Taken::Other(Error::invalid(format!("process {pid} that exported the allocation has exited"))),
                Some(libc::EPERM) => Taken::Other(Error::invalid(format!(
                    "not permitted to take descriptors from process {pid} (pidfd_getfd needs ptrace access: the same user; \
                     with kernel.yama.ptrace_scope=1 an ancestor of the exporter, or any process once the exporter called \
                     rmmIpcAllowOpeners; in a container, a seccomp profile that allows pidfd_getfd, which Docker's default \
                     allows only with CAP_SYS_PTRACE)"
                ))),
                Some(libc::ENOSYS) => Taken::Other(Error::NotSupported("this kernel has no pidfd_getfd (Linux 5.6)".into())),
                _ => Taken::Other(Error::Internal(format!("pidfd_getfd({pid}, {fd}): {error}"))),
            });
        }
        // SAFETY: the kernel just opened `own` for us.
        Ok(unsafe { OwnedFd::from_raw_fd(own as RawFd) })
    }
}

/// Lets any process of the same user take descriptors from this one (`prctl(PR_SET_PTRACER,
/// PR_SET_PTRACER_ANY)`), for Yama's restricted ptrace scope (1), where otherwise only the
/// exporter's ancestors may open its virtual-memory handles. It widens who may ptrace this
/// process to every process of its user: call it only where that is acceptable.
pub fn allow_openers() -> Result<()> {
    // SAFETY: PR_SET_PTRACER takes a pid (or PR_SET_PTRACER_ANY) and changes nothing else.
    if unsafe { libc::prctl(libc::PR_SET_PTRACER, libc::PR_SET_PTRACER_ANY, 0, 0, 0) } != 0 {
        let error = std::io::Error::last_os_error();
        // Without Yama there is nothing to allow.
        if error.raw_os_error() != Some(libc::EINVAL) {
            return Err(Error::Internal(format!("prctl(PR_SET_PTRACER): {error}")));
        }
    }
    Ok(())
}
