//! IPC of allocations between processes on simulated devices. Simulated physical memory of the
//! virtual-memory API is a memory file, so expandable memory really crosses processes here: a
//! second process (this test program run again as `child`, with what to do in its
//! environment) opens the handle through `pidfd_getfd`, maps the same bytes, and writes into
//! them. Simulated `cudaMalloc` memory is the exporter's heap: for pool memory the handle, its
//! refusal in the exporting process and in another are checked here; its data path needs a
//! GPU (scripts/gpu-ipc.sh).

mod common;

use common::{last_message, over, setup_with, stamp, stamped};
use rmm::boundary::handles::rmmResource_t;
use rmm::boundary::types::rmmExpandableOptions_t;
use rmm::boundary::*;
use rmm::error::rmmError_t::{self, *};
use std::ffi::{c_char, c_void};
use std::io::{BufRead, BufReader, Write};
use std::process::{Child, Command, Stdio};
use std::ptr::null_mut;

const MIB: usize = 1 << 20;

fn allocate(resource: rmmResource_t, bytes: usize) -> usize {
    let mut ptr: *mut c_void = null_mut();
    assert_eq!(rmmResourceAllocate(resource, &mut ptr, bytes, null_mut()), RMM_SUCCESS, "{}", last_message());
    ptr as usize
}

fn free(resource: rmmResource_t, ptr: usize, bytes: usize) {
    assert_eq!(rmmResourceDeallocate(resource, ptr as *mut c_void, bytes, null_mut()), RMM_SUCCESS, "{}", last_message());
}

fn handle_of(ptr: usize) -> Result<rmmIpcMemHandle_t, rmmError_t> {
    let mut handle = rmmIpcMemHandle_t { reserved: [0; RMM_IPC_HANDLE_SIZE] };
    match rmmIpcGetMemHandle(&mut handle, ptr as *const c_void) {
        RMM_SUCCESS => Ok(handle),
        error => Err(error),
    }
}

fn hex(handle: &rmmIpcMemHandle_t) -> String {
    handle.reserved.iter().map(|&byte| format!("{:02x}", byte as u8)).collect()
}

fn from_hex(text: &str) -> rmmIpcMemHandle_t {
    let mut handle = rmmIpcMemHandle_t { reserved: [0; RMM_IPC_HANDLE_SIZE] };
    for (at, byte) in handle.reserved.iter_mut().enumerate() {
        *byte = u8::from_str_radix(&text[2 * at..2 * at + 2], 16).expect("a hex handle") as c_char;
    }
    handle
}

fn open(handle: &rmmIpcMemHandle_t) -> Result<usize, rmmError_t> {
    let mut ptr: *mut c_void = null_mut();
    match rmmIpcOpenMemHandle(&mut ptr, handle) {
        RMM_SUCCESS => Ok(ptr as usize),
        error => Err(error),
    }
}

fn shareable() -> rmmResource_t {
    over(|h| rmmIpcExpandableResourceCreate(h, std::ptr::null()))
}

/// This program again, as `child`, told what to do: `action` and the handle in its
/// environment (with `extra` variables), its standard input and output piped.
fn spawn(action: &str, handle: &rmmIpcMemHandle_t, extra: &[(&str, &str)]) -> Child {
    let mut command = Command::new(std::env::current_exe().unwrap());
    command.args(["--exact", "child", "--include-ignored", "--nocapture", "--test-threads=1", "-q"]);
    command.env("RMM_IPC_TEST_ACTION", action).env("RMM_IPC_TEST_HANDLE", hex(handle));
    for (name, value) in extra {
        command.env(name, value);
    }
    command.stdin(Stdio::piped()).stdout(Stdio::piped()).spawn().expect("the test program runs again")
}

/// The child's output lines that start with `>`, once it has exited successfully.
fn finish(child: Child) -> Vec<String> {
    let output = child.wait_with_output().unwrap();
    let text = String::from_utf8_lossy(&output.stdout).into_owned();
    assert!(output.status.success(), "the child failed: {text}");
    text.lines().filter_map(|line| line.strip_prefix('>')).map(str::to_string).collect()
}

/// Reads the child's output up to its line `>ready`.
fn wait_ready(child: &mut Child) {
    let mut reader = BufReader::new(child.stdout.as_mut().unwrap());
    let mut line = String::new();
    while reader.read_line(&mut line).unwrap() > 0 {
        if line.trim() == ">ready" {
            return;
        }
        line.clear();
    }
    panic!("the child ended before it was ready");
}

fn say(line: &str) {
    println!(">{line}");
    std::io::stdout().flush().unwrap();
}

fn wait_for_parent() {
    let mut line = String::new();
    std::io::stdin().read_line(&mut line).unwrap();
}

/// The other process (run by the tests below, never on its own: it does nothing without
/// `RMM_IPC_TEST_ACTION`).
#[test]
#[ignore = "the second process of the tests in this file"]
fn child() {
    let Ok(action) = std::env::var("RMM_IPC_TEST_ACTION") else { return };
    let _guard = setup_with("2:256MiB");
    if let Ok(device) = std::env::var("RMM_IPC_TEST_DEVICE") {
        assert_eq!(rmmSetDevice(device.parse().unwrap()), RMM_SUCCESS);
    }
    let handle = from_hex(&std::env::var("RMM_IPC_TEST_HANDLE").unwrap());
    let bytes: usize = std::env::var("RMM_IPC_TEST_BYTES").map_or(0, |b| b.parse().unwrap());
    match action.as_str() {
        // Opens the handle, checks the exporter's bytes, writes its own over the first page,
        // and closes it (or, with RMM_IPC_TEST_HOLD, waits for a line first).
        "read" => {
            let ptr = open(&handle).unwrap_or_else(|_| panic!("{}", last_message()));
            assert!(stamped(ptr, bytes, 0x5A), "the opened memory shows the exporter's bytes");
            stamp(ptr, bytes.min(4096), 0xC3);
            if std::env::var_os("RMM_IPC_TEST_HOLD").is_some() {
                say("ready");
                wait_for_parent();
            }
            assert_eq!(rmmIpcCloseMemHandle(ptr as *mut c_void), RMM_SUCCESS, "{}", last_message());
            assert_eq!(rmmIpcCloseMemHandle(ptr as *mut c_void), RMM_ERROR_INVALID_ARGUMENT, "closed already");
            say("closed");
        }
        // Opens it and exits without closing (a process that crashed).
        "leave" => {
            open(&handle).unwrap_or_else(|_| panic!("{}", last_message()));
            say("opened");
        }
        // Must be refused: says the code and the message.
        "refused" => {
            let error = open(&handle).expect_err("the open is refused");
            say(&format!("{error:?} {}", last_message()));
        }
        // Exports a block of its own (the handle in its environment is unused), says its
        // handle, and waits for a line before it frees it and exits.
        "export" => {
            let resource = shareable();
            let ptr = allocate(resource, 6 * MIB);
            stamp(ptr, 6 * MIB, 0x5A);
            say(&hex(&handle_of(ptr).unwrap()));
            say("ready");
            wait_for_parent();
            assert!(stamped(ptr, 4096, 0xC3), "the parent wrote into the block");
            free(resource, ptr, 6 * MIB);
            assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
        }
        // Decodes PyTorch's expandable-segment handle in RMM_IPC_TEST_TORCH as PyTorch's
        // allocator does, maps its pages, checks the exporter's bytes at the handle's offset
        // (RMM_IPC_TEST_OFFSET), writes its own over the block's first 4 KiB and closes.
        "torch" => {
            let text = std::env::var("RMM_IPC_TEST_TORCH").unwrap();
            let bytes_of_handle: Vec<u8> =
                (0..text.len()).step_by(2).map(|at| u8::from_str_radix(&text[at..at + 2], 16).unwrap()).collect();
            let offset: usize = std::env::var("RMM_IPC_TEST_OFFSET").unwrap().parse().unwrap();
            let (pid, page, fds) = torch_decode(&bytes_of_handle);
            let mut base: *mut c_void = null_mut();
            assert_eq!(rmmIpcOpenMemPages(&mut base, pid, page, fds.as_ptr(), fds.len()), RMM_SUCCESS, "{}", last_message());
            let ptr = base as usize + offset;
            assert!(stamped(ptr, bytes, 0x5A), "the opened pages show the exporter's bytes at the offset");
            stamp(ptr, bytes.min(4096), 0xC3);
            assert_eq!(rmmIpcCloseMemHandle(base), RMM_SUCCESS, "{}", last_message());
            say("closed");
        }
        other => panic!("unknown action {other}"),
    }
}

#[test]
fn expandable_memory_opened_in_another_process_shows_and_takes_the_same_bytes() {
    let _guard = setup_with("2:256MiB");
    let resource = shareable();
    // A large block over several pages, and a small one from the small blocks' pages.
    for bytes in [45 * MIB, 3000] {
        let ptr = allocate(resource, bytes);
        stamp(ptr, bytes, 0x5A);
        let handle = handle_of(ptr).unwrap_or_else(|_| panic!("{}", last_message()));
        assert_eq!(hex(&handle), hex(&handle_of(ptr).unwrap()), "the same handle until the block is freed");
        let child = spawn("read", &handle, &[("RMM_IPC_TEST_BYTES", &bytes.to_string())]);
        assert_eq!(finish(child), ["closed"]);
        let written = bytes.min(4096);
        assert!(stamped(ptr, written, 0xC3), "the other process's writes reach this one");
        assert!(stamped(ptr + written, bytes - written, 0x5A));
        free(resource, ptr, bytes);
    }

    // Opened in the exporting process itself: the same memory at another address.
    let ptr = allocate(resource, 5 * MIB);
    stamp(ptr, 5 * MIB, 0x11);
    let opened = open(&handle_of(ptr).unwrap()).unwrap_or_else(|_| panic!("{}", last_message()));
    assert_ne!(opened, ptr);
    assert!(stamped(opened, 5 * MIB, 0x11));
    stamp(opened, 64, 0x22);
    assert!(stamped(ptr, 64, 0x22));
    assert_eq!(rmmIpcCloseMemHandle(opened as *mut c_void), RMM_SUCCESS);
    free(resource, ptr, 5 * MIB);

    // The other way round: this process opens what a child exported, and writes into it.
    let mut child = spawn("export", &handle_of(allocate(resource, MIB)).unwrap(), &[]);
    let mut reader = BufReader::new(child.stdout.take().unwrap());
    let said = (&mut reader).lines().map(Result::unwrap).find_map(|line| line.strip_prefix('>').map(str::to_string));
    let exported = from_hex(&said.expect("the child says its handle"));
    let ptr = open(&exported).unwrap_or_else(|_| panic!("{}", last_message()));
    assert!(stamped(ptr, 6 * MIB, 0x5A));
    stamp(ptr, 4096, 0xC3);
    assert_eq!(rmmIpcCloseMemHandle(ptr as *mut c_void), RMM_SUCCESS);
    writeln!(child.stdin.as_mut().unwrap()).unwrap();
    assert!(child.wait().unwrap().success());
    drop(reader);
    // The child has exited: its handle names a process that is gone.
    assert_eq!(open(&exported), Err(RMM_ERROR_INVALID_ARGUMENT));
    assert!(last_message().contains("has exited"), "{}", last_message());
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
}

fn live_bytes(resource: rmmResource_t) -> usize {
    let mut figures = rmm::boundary::types::rmmFootprint_t::default();
    assert_eq!(rmmResourceGetFootprint(resource, &mut figures), RMM_SUCCESS);
    figures.live_bytes
}

/// A block freed while another process has it open stays out of the pool (the other process
/// may still read it) until that process closes it or exits; no process can open it from the
/// free on.
#[test]
fn a_block_freed_while_open_elsewhere_stays_out_of_the_pool_until_it_is_closed_there() {
    let _guard = setup_with("2:256MiB");
    let resource = shareable();
    let bytes = 24 * MIB;
    let ptr = allocate(resource, bytes);
    stamp(ptr, bytes, 0x5A);
    let handle = handle_of(ptr).unwrap();
    let mut holder = spawn("read", &handle, &[("RMM_IPC_TEST_BYTES", &bytes.to_string()), ("RMM_IPC_TEST_HOLD", "1")]);
    wait_ready(&mut holder);

    free(resource, ptr, bytes);
    assert_eq!(live_bytes(resource), bytes, "kept out of the pool while open elsewhere");
    let other = allocate(resource, bytes);
    assert_ne!(other, ptr, "not handed out again");
    assert_eq!(handle_of(ptr).err(), Some(RMM_ERROR_INVALID_ARGUMENT), "freed: no handle");
    let refused = finish(spawn("refused", &handle, &[]));
    assert!(refused[0].contains("RMM_ERROR_INVALID_ARGUMENT") && refused[0].contains("freed"), "{refused:?}");

    writeln!(holder.stdin.as_mut().unwrap()).unwrap();
    assert!(holder.wait().unwrap().success());
    assert!(stamped(ptr, 4096, 0xC3), "the holder wrote into it until it closed");
    // The next free (or a release) gives the closed block back.
    free(resource, other, bytes);
    assert_eq!(live_bytes(resource), 0, "closed everywhere: back in the pool");
    assert_eq!(allocate(resource, bytes), ptr, "and handed out again");
    free(resource, ptr, bytes);

    // A process that exits with the block open holds it no longer.
    let ptr = allocate(resource, bytes);
    stamp(ptr, bytes, 0x5A);
    assert_eq!(finish(spawn("leave", &handle_of(ptr).unwrap(), &[])), ["opened"]);
    free(resource, ptr, bytes);
    assert_eq!(live_bytes(resource), 0, "its opener has exited: freed at once");
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
    assert!(common::races().is_empty(), "{:?}", common::races());
}

#[test]
fn what_cannot_be_shared_or_opened_is_refused_with_the_reason() {
    let _guard = setup_with("2:256MiB");
    let resource = shareable();
    let ptr = allocate(resource, 4 * MIB);
    let mut handle = handle_of(ptr).unwrap();
    let check = |code: rmmError_t, expected: rmmError_t, words: &str| {
        assert_eq!(code, expected, "{}", last_message());
        assert!(last_message().contains(words), "{words:?} not in {}", last_message());
    };

    check(rmmIpcGetMemHandle(null_mut(), ptr as *const c_void), RMM_ERROR_INVALID_ARGUMENT, "handle is NULL");
    check(rmmIpcGetMemHandle(&mut handle, std::ptr::null()), RMM_ERROR_INVALID_ARGUMENT, "ptr is NULL");
    let foreign = [0u8; 64];
    check(rmmIpcGetMemHandle(&mut handle, foreign.as_ptr().cast()), RMM_ERROR_INVALID_ARGUMENT, "not an allocation rmm handed out");
    check(rmmIpcGetMemHandle(&mut handle, (ptr + 256) as *const c_void), RMM_ERROR_INVALID_ARGUMENT, "not an allocation");
    let mut opened: *mut c_void = null_mut();
    check(rmmIpcOpenMemHandle(null_mut(), &handle), RMM_ERROR_INVALID_ARGUMENT, "ptr is NULL");
    check(rmmIpcOpenMemHandle(&mut opened, std::ptr::null()), RMM_ERROR_INVALID_ARGUMENT, "handle is NULL");
    let garbage = rmmIpcMemHandle_t { reserved: [7; RMM_IPC_HANDLE_SIZE] };
    check(rmmIpcOpenMemHandle(&mut opened, &garbage), RMM_ERROR_INVALID_ARGUMENT, "not an rmm IPC handle");
    check(rmmIpcCloseMemHandle(null_mut()), RMM_ERROR_INVALID_ARGUMENT, "ptr is NULL");
    check(rmmIpcCloseMemHandle(ptr as *mut c_void), RMM_ERROR_INVALID_ARGUMENT, "not opened from an IPC handle");
    assert!(opened.is_null(), "nothing written on failure");

    // Another device: device 1 reaches device 0's memory where peers reach each other, and is
    // refused where they do not.
    handle = handle_of(ptr).unwrap();
    let on_device_1 = [("RMM_IPC_TEST_DEVICE", "1"), ("RMM_IPC_TEST_BYTES", "0")];
    assert_eq!(finish(spawn("read", &handle, &on_device_1)), ["closed"]);
    let apart = finish(spawn("refused", &handle, &[("RMM_IPC_TEST_DEVICE", "1"), ("RMM_SIM_PEER_ACCESS", "off")]));
    assert!(apart[0].contains("RMM_ERROR_INVALID_ARGUMENT") && apart[0].contains("device 1 cannot reach"), "{apart:?}");

    // A freed allocation's handle, with no process holding it.
    free(resource, ptr, 4 * MIB);
    let freed = finish(spawn("refused", &handle, &[]));
    assert!(freed[0].contains("RMM_ERROR_INVALID_ARGUMENT") && freed[0].contains("freed"), "{freed:?}");
    check(rmmIpcOpenMemHandle(&mut opened, &handle), RMM_ERROR_INVALID_ARGUMENT, "freed");

    // Any expandable resource's memory has a handle (its pages are exportable where the device
    // offers it), but only once one is asked for; managed memory has none.
    let plain = over(|h| rmmExpandableResourceCreate(h, 0));
    let block = allocate(plain, MIB);
    assert_eq!(rmmIpcGetMemHandle(&mut handle, block as *const c_void), RMM_SUCCESS, "{}", last_message());
    free(plain, block, MIB);
    assert_eq!(rmmResourceDestroy(plain), RMM_SUCCESS);
    let managed = over(|h| rmmManagedResourceCreate(h));
    let block = allocate(managed, MIB);
    check(rmmIpcGetMemHandle(&mut handle, block as *const c_void), RMM_ERROR_NOT_SUPPORTED, "managed");
    free(managed, block, MIB);
    assert_eq!(rmmResourceDestroy(managed), RMM_SUCCESS);

    // Pool memory: the driver's handle of the chunk, which the exporting process cannot open
    // (as the driver refuses), and which simulated memory cannot cross processes with.
    let cuda = over(|h| rmmCudaResourceCreate(h));
    let pool = over(|h| rmmPoolResourceCreate(h, cuda, 16 * MIB, 0));
    let block = allocate(pool, MIB);
    let pooled = handle_of(block).unwrap_or_else(|_| panic!("{}", last_message()));
    check(rmmIpcOpenMemHandle(&mut opened, &pooled), RMM_ERROR_INVALID_ARGUMENT, "process that made it");
    let elsewhere = finish(spawn("refused", &pooled, &[]));
    assert!(elsewhere[0].contains("RMM_ERROR_NOT_SUPPORTED") && elsewhere[0].contains("heap of process"), "{elsewhere:?}");
    free(pool, block, MIB);
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);

    let options = rmmExpandableOptions_t {
        initial_size: 0,
        maximum_size: 0,
        release_free_pages: 0,
        release_threshold: 0,
        page_size: 3 * MIB,
        peers: std::ptr::null(),
        num_peers: 0,
    };
    let mut refused: rmmResource_t = null_mut();
    check(rmmIpcExpandableResourceCreate(&mut refused, &options), RMM_ERROR_INVALID_ARGUMENT, "granularity");
    check(rmmIpcExpandableResourceCreate(null_mut(), std::ptr::null()), RMM_ERROR_INVALID_ARGUMENT, "resource is NULL");
    assert!(refused.is_null());
    assert_eq!(rmmIpcAllowOpeners(), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
}

/// The pages that hold `ptr`, and their descriptors.
fn pages_of(ptr: usize) -> Result<(rmmIpcMemPages_t, Vec<i32>), rmmError_t> {
    let mut pages = rmmIpcMemPages_t { first_page: null_mut(), page_size: 0, page_count: 0 };
    match rmmIpcGetMemPages(&mut pages, null_mut(), 0, ptr as *const c_void) {
        RMM_SUCCESS => {}
        error => return Err(error),
    }
    let mut fds = vec![-1; pages.page_count];
    match rmmIpcGetMemPages(&mut pages, fds.as_mut_ptr(), fds.len(), ptr as *const c_void) {
        RMM_SUCCESS => Ok((pages, fds)),
        error => Err(error),
    }
}

/// PyTorch's handle of an expandable segment's pages (c10/cuda/CUDACachingAllocator.cpp,
/// 2.11: `shareIpcHandle` and `ExpandableSegment::share`), as python/rmm_rs_torch.cpp writes
/// it: version 2, 'e', a `ShareHeader` { pid_t pid (4 bytes, 4 zero bytes of padding),
/// size_t segment_size, size_t num_handles } in the machine's byte order, then one int per
/// page, its descriptor number in the sender.
fn torch_encode(pid: u32, pages: &rmmIpcMemPages_t, fds: &[i32]) -> Vec<u8> {
    let mut bytes = vec![2u8, b'e'];
    bytes.extend_from_slice(&pid.to_ne_bytes());
    bytes.extend_from_slice(&[0; 4]);
    bytes.extend_from_slice(&(pages.page_size as u64).to_ne_bytes());
    bytes.extend_from_slice(&(pages.page_count as u64).to_ne_bytes());
    for fd in fds {
        bytes.extend_from_slice(&fd.to_ne_bytes());
    }
    bytes
}

/// What PyTorch's receiver reads from such a handle: the sender's pid, the page size and the
/// descriptor numbers; the layout is checked on the way.
fn torch_decode(bytes: &[u8]) -> (i32, usize, Vec<i32>) {
    assert!(bytes.len() >= 26 && bytes[0] == 2 && bytes[1] == b'e', "version 2, 'e'");
    let field = |at: usize| u64::from_ne_bytes(bytes[at..at + 8].try_into().unwrap()) as usize;
    let pid = i32::from_ne_bytes(bytes[2..6].try_into().unwrap());
    assert_eq!(&bytes[6..10], &[0; 4], "the header's padding is zero, so equal shares are equal bytes");
    let (page, count) = (field(10), field(18));
    assert_eq!(bytes.len(), 26 + 4 * count, "one int per page after the 24-byte header");
    let fds = (0..count).map(|at| i32::from_ne_bytes(bytes[26 + 4 * at..30 + 4 * at].try_into().unwrap())).collect();
    (pid, page, fds)
}

fn descriptor_open(fd: i32) -> bool {
    // SAFETY: F_GETFD only reads the descriptor's flags.
    unsafe { libc::fcntl(fd, libc::F_GETFD) != -1 }
}

/// Expandable memory in PyTorch's expandable-segment format: the pages that hold a block,
/// each page's descriptor (the same at every call, closed once the page is unmapped), opened
/// by another process as PyTorch's allocator opens them, and by this one.
#[test]
fn pages_of_expandable_memory_open_elsewhere_as_pytorch_shares_them() {
    let _guard = setup_with("2:256MiB");
    // The default stack's expandable resource (not only a shareable one) has exportable pages.
    let resource = over(|h| rmmExpandableResourceCreate(h, 0));
    let spacer = allocate(resource, 3 * MIB);
    for bytes in [45 * MIB, 3000, 5 * MIB + 512] {
        let ptr = allocate(resource, bytes);
        stamp(ptr, bytes, 0x5A);
        let (pages, fds) = pages_of(ptr).unwrap_or_else(|_| panic!("{}", last_message()));
        let first = pages.first_page as usize;
        let page = pages.page_size;
        assert!(page > 0 && first.is_multiple_of(page) && first <= ptr && ptr - first < page, "{pages:?} for {ptr:#x}");
        assert_eq!(pages.page_count, (ptr + bytes).next_multiple_of(page).saturating_sub(first) / page, "pages from first to last byte");
        assert!(fds.iter().all(|&fd| descriptor_open(fd)), "{fds:?}");
        assert_eq!(pages_of(ptr).unwrap().1, fds, "the same descriptors at every call: none made per call");
        let mut distinct = fds.clone();
        distinct.sort_unstable();
        distinct.dedup();
        assert_eq!(distinct.len(), fds.len(), "one descriptor per page");

        let handle = torch_encode(std::process::id(), &pages, &fds);
        assert_eq!(torch_decode(&handle), (std::process::id() as i32, page, fds.clone()));
        let text: String = handle.iter().map(|byte| format!("{byte:02x}")).collect();
        let offset = (ptr - first).to_string();
        let extra = [("RMM_IPC_TEST_TORCH", text.as_str()), ("RMM_IPC_TEST_OFFSET", &offset), ("RMM_IPC_TEST_BYTES", &bytes.to_string())];
        let unused = rmmIpcMemHandle_t { reserved: [0; RMM_IPC_HANDLE_SIZE] };
        assert_eq!(finish(spawn("torch", &unused, &extra)), ["closed"]);
        let written = bytes.min(4096);
        assert!(stamped(ptr, written, 0xC3), "the other process's writes reach this one");
        assert!(stamped(ptr + written, bytes - written, 0x5A));

        // This process opens its own pages too: the same memory at another address.
        let mut base: *mut c_void = null_mut();
        assert_eq!(
            rmmIpcOpenMemPages(&mut base, std::process::id() as i32, page, fds.as_ptr(), fds.len()),
            RMM_SUCCESS,
            "{}",
            last_message()
        );
        assert_ne!(base as usize, first);
        assert!(stamped(base as usize + (ptr - first), written, 0xC3));
        assert_eq!(rmmIpcCloseMemHandle(base), RMM_SUCCESS, "{}", last_message());
        free(resource, ptr, bytes);
    }

    // Released, the pages are unmapped and their descriptors closed.
    let ptr = allocate(resource, 40 * MIB);
    let (_, fds) = pages_of(ptr).unwrap();
    free(resource, ptr, 40 * MIB);
    free(resource, spacer, 3 * MIB);
    assert!(fds.iter().all(|&fd| descriptor_open(fd)), "freed, the pages stay mapped in the pool until released");
    assert_eq!(rmmResourceRelease(resource, null_mut()), RMM_SUCCESS, "{}", last_message());
    assert!(fds.iter().all(|&fd| !descriptor_open(fd)), "descriptors of unmapped pages are closed: {fds:?}");
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
    assert!(common::races().is_empty(), "{:?}", common::races());
}

#[test]
fn pages_that_cannot_be_shared_or_opened_are_refused_with_the_reason() {
    let _guard = setup_with("2:256MiB");
    let resource = shareable();
    let ptr = allocate(resource, 4 * MIB);
    let check = |code: rmmError_t, expected: rmmError_t, words: &str| {
        assert_eq!(code, expected, "{}", last_message());
        assert!(last_message().contains(words), "{words:?} not in {}", last_message());
    };
    let mut pages = rmmIpcMemPages_t { first_page: null_mut(), page_size: 0, page_count: 0 };
    let mut fds = [-1; 8];
    let at = ptr as *const c_void;
    check(rmmIpcGetMemPages(null_mut(), fds.as_mut_ptr(), 8, at), RMM_ERROR_INVALID_ARGUMENT, "pages is NULL");
    check(rmmIpcGetMemPages(&mut pages, fds.as_mut_ptr(), 8, std::ptr::null()), RMM_ERROR_INVALID_ARGUMENT, "ptr is NULL");
    check(rmmIpcGetMemPages(&mut pages, null_mut(), 8, at), RMM_ERROR_INVALID_ARGUMENT, "fds is NULL");
    check(rmmIpcGetMemPages(&mut pages, fds.as_mut_ptr(), 1, at), RMM_ERROR_INVALID_ARGUMENT, "room for 1");
    let foreign = [0u8; 64];
    check(rmmIpcGetMemPages(&mut pages, fds.as_mut_ptr(), 8, foreign.as_ptr().cast()), RMM_ERROR_INVALID_ARGUMENT, "not an allocation");
    check(
        rmmIpcGetMemPages(&mut pages, fds.as_mut_ptr(), 8, (ptr + 256) as *const c_void),
        RMM_ERROR_INVALID_ARGUMENT,
        "not an allocation",
    );
    assert!(pages.first_page.is_null() && pages.page_count == 0 && fds == [-1; 8], "nothing written on failure");

    // Not virtual memory: a pool's cudaMalloc chunks and managed memory.
    let cuda = over(|h| rmmCudaResourceCreate(h));
    let pool = over(|h| rmmPoolResourceCreate(h, cuda, 16 * MIB, 0));
    let block = allocate(pool, MIB);
    check(rmmIpcGetMemPages(&mut pages, fds.as_mut_ptr(), 8, block as *const c_void), RMM_ERROR_NOT_SUPPORTED, "cudaIpcGetMemHandle");
    free(pool, block, MIB);
    assert_eq!(rmmResourceDestroy(pool), RMM_SUCCESS);
    assert_eq!(rmmResourceDestroy(cuda), RMM_SUCCESS);
    let managed = over(|h| rmmManagedResourceCreate(h));
    let block = allocate(managed, MIB);
    check(rmmIpcGetMemPages(&mut pages, fds.as_mut_ptr(), 8, block as *const c_void), RMM_ERROR_NOT_SUPPORTED, "managed");
    free(managed, block, MIB);
    assert_eq!(rmmResourceDestroy(managed), RMM_SUCCESS);

    // Opening: bad arguments, a process that has exited, a descriptor it does not have.
    let (pages, fds) = pages_of(ptr).unwrap();
    let me = std::process::id() as i32;
    let mut opened: *mut c_void = null_mut();
    let (page, count) = (pages.page_size, pages.page_count);
    check(rmmIpcOpenMemPages(null_mut(), me, page, fds.as_ptr(), count), RMM_ERROR_INVALID_ARGUMENT, "ptr is NULL");
    check(rmmIpcOpenMemPages(&mut opened, me, page, std::ptr::null(), count), RMM_ERROR_INVALID_ARGUMENT, "fds is NULL");
    check(rmmIpcOpenMemPages(&mut opened, me, page, fds.as_ptr(), 0), RMM_ERROR_INVALID_ARGUMENT, "count is 0");
    check(rmmIpcOpenMemPages(&mut opened, me, page + 4096, fds.as_ptr(), count), RMM_ERROR_INVALID_ARGUMENT, "granularity");
    check(rmmIpcOpenMemPages(&mut opened, -3, page, fds.as_ptr(), count), RMM_ERROR_INVALID_ARGUMENT, "not a process id");
    let mut gone = Command::new("true").spawn().unwrap();
    let gone_pid = gone.id() as i32;
    gone.wait().unwrap();
    check(rmmIpcOpenMemPages(&mut opened, gone_pid, page, fds.as_ptr(), count), RMM_ERROR_INVALID_ARGUMENT, "has exited");
    let closed = [987_654];
    check(rmmIpcOpenMemPages(&mut opened, me, page, closed.as_ptr(), 1), RMM_ERROR_INVALID_ARGUMENT, "freed");
    assert!(opened.is_null(), "nothing written on failure");

    // Freed and legacy-finalized pointers are no allocation.
    free(resource, ptr, 4 * MIB);
    let mut fds = [-1; 8];
    let mut pages = rmmIpcMemPages_t { first_page: null_mut(), page_size: 0, page_count: 0 };
    check(rmmIpcGetMemPages(&mut pages, fds.as_mut_ptr(), 8, at), RMM_ERROR_INVALID_ARGUMENT, "already freed");
    assert_eq!(rmmInitialize(std::ptr::null()), RMM_SUCCESS, "{}", last_message());
    let mut legacy: *mut c_void = null_mut();
    assert_eq!(rmmAlloc(&mut legacy, MIB, null_mut(), std::ptr::null(), 0), RMM_SUCCESS, "{}", last_message());
    assert_eq!(rmmFree(legacy, null_mut(), std::ptr::null(), 0), RMM_SUCCESS);
    assert_eq!(rmmFinalize(), RMM_SUCCESS);
    check(rmmIpcGetMemPages(&mut pages, fds.as_mut_ptr(), 8, legacy), RMM_ERROR_INVALID_ARGUMENT, "not an allocation");
    assert_eq!(rmmResourceDestroy(resource), RMM_SUCCESS);
}
