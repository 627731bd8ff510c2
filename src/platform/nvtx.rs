//! A client of NVTX v3's Memory extension (the "NVTX API for Compute Sanitizer"), written in
//! Rust: no C compiler, no CUDA toolkit and no NVTX header at build time. Pools tell a memory
//! checker (compute-sanitizer's memcheck and initcheck) which parts of their chunks are handed
//! out: each chunk is a heap (`heap_register`), each block handed out a region of it
//! (`regions_register`), gone again at free (`regions_unregister`) and when the chunk goes back
//! (`heap_unregister`).
//!
//! NVTX is header-only: a tool is found through the environment variable
//! `NVTX_INJECTION64_PATH` (compute-sanitizer sets it), loaded with `dlopen` and initialized
//! through its exported entry points, once. Without the variable (the normal case) every call
//! here costs one relaxed atomic load once the first call has decided there is no tool.
//!
//! The protocol, as NVIDIA/NVTX's `c/include/nvtx3` headers implement it (the facts relied on,
//! each with its header):
//! - Core (`nvtxDetail/nvtxInit.h`, `nvtxImpl.h`, `nvtxTypes.h`): the tool's
//!   `int InitializeInjectionNvtx2(const void* (*getExportTable)(uint32_t))` is called with the
//!   client's export-table function. Table 1 (`NVTX_ETID_CALLBACKS`) is `{size_t struct_size;
//!   int (*GetModuleFunctionTable)(module, NvtxFunctionPointer*** out_table, unsigned* out_size)}`;
//!   table 3 (`NVTX_ETID_VERSIONINFO`) is `{size_t struct_size; uint32_t version (3); uint32_t
//!   reserved; void (*SetInjectionNvtxVersion)(uint32_t)}`. A module's table has SIZE + 1
//!   entries, the first and the last null, the others pointers to the client's function slots,
//!   which the tool fills; `out_size` is SIZE. Modules 1 to 6 (CORE, CUDA, OPENCL, CUDART,
//!   CORE2, SYNC) have SIZE 16, 9, 15, 7, 16 and 7; `nvtxDomainCreateA` is CORE2's slot 12.
//!   A non-zero return is success.
//! - Extensions (`nvtxDetail/nvtxExtInit.h`, `nvtxExtTypes.h`, `nvtxExtImplMem_v1.h`): after
//!   the core (`nvtxInitialize(0)` runs first), the tool's
//!   `int InitializeInjectionNvtxExtension(nvtxExtModuleInfo_t*)` is called with `{uint16_t
//!   nvtxVer (3), structSize, moduleId (NVTX_EXT_MODULEID_MEM: 1), compatId
//!   (NVTX_EXT_COMPATID_MEM: 0x0102); size_t segmentsCount (1); segments; getExportFunction
//!   (NULL); extInfo (NULL)}`, one segment `{size_t segmentId (1); size_t slotCount (63);
//!   intptr_t* functionSlots}`, all slots 0 (`NVTX_EXTENSION_FRESH`). The tool stores the
//!   function of callback id N in `functionSlots[N]`; a slot still 0 or 1
//!   (`NVTX_EXTENSION_DISABLED`) afterwards is a function the tool lacks.
//! - Mem callback ids (`nvToolsExtMem.h`): 1 `nvtxMemHeapRegister`, 2 `nvtxMemHeapUnregister`,
//!   4 `nvtxMemRegionsRegister`, 6 `nvtxMemRegionsUnregister`; the
//!   structures below follow that header field for field, zero-initialized as the sanitizer's
//!   guide asks. Unregistering a heap needs no unregistration of its regions first (the header
//!   says so), but the core does it anyway where blocks live on in a changed chunk.
//!
//! A domain named "rmm-rs" is made through the core protocol (`nvtxDomainCreateA`) where the
//! tool offers it; otherwise the calls use the default domain (NULL), as the extension allows.
//! A tool that lacks any of the four heap and region functions counts as no tool. Nothing here
//! panics.

use std::ffi::{c_char, c_int, c_uint, c_void, CStr};
use std::sync::atomic::{AtomicU8, AtomicUsize, Ordering};
use std::sync::OnceLock;

/// The variable a tool names its injection library in (`NVTX_INJECTION32_PATH` on 32-bit
/// targets, which rmm-rs does not support).
pub const INJECTION_VARIABLE: &str = "NVTX_INJECTION64_PATH";

/// `RMM_NVTX=0` keeps the pools opaque to an attached tool (as RAPIDS RMM's are): to compare,
/// or where a tool misreads the registration.
pub const SWITCH_VARIABLE: &str = "RMM_NVTX";

const NVTX_VERSION: u16 = 3;
const MODULE_ID_MEM: u16 = 1;
const COMPAT_ID_MEM: u16 = 0x0102;
/// Slots of the Mem extension's one segment (`NVTX_EXT_MEM_SLOT_COUNT`).
const MEM_SLOT_COUNT: usize = 63;
const SLOT_FRESH: usize = 0;
const SLOT_DISABLED: usize = 1;
/// The module state values of `nvtxExtInitOnce`, kept in the slot before the segment.
const MODULE_STARTING: usize = 2;
const MODULE_LOADED: usize = 3;

const CBID_HEAP_REGISTER: usize = 1;
const CBID_HEAP_UNREGISTER: usize = 2;
const CBID_REGIONS_REGISTER: usize = 4;
const CBID_REGIONS_UNREGISTER: usize = 6;

const HEAP_USAGE_SUB_ALLOCATOR: u32 = 1;
const MEM_TYPE_VIRTUAL_ADDRESS: u32 = 1;
const REGION_REF_POINTER: u32 = 1;
const MESSAGE_TYPE_ASCII: u32 = 1;

const ETID_CALLBACKS: u32 = 1;
const ETID_VERSIONINFO: u32 = 3;
/// (module id, SIZE) of the core's callback modules, CORE to SYNC.
const CORE_MODULES: [(u32, usize); 6] = [(1, 16), (2, 9), (3, 15), (4, 7), (5, 16), (6, 7)];
const MODULE_CORE2: u32 = 5;
const CBID_CORE2_DOMAIN_CREATE_A: usize = 12;
/// Entries of the largest core module table (SIZE + 1).
const CORE_TABLE_LEN: usize = 17;

/// The most characters the sanitizer accepts in a name (`^[:print:]{1,49}$`).
const NAME_MAX: usize = 49;

/// `nvtxMemVirtualRangeDesc_v1`.
#[repr(C)]
struct VirtualRange {
    size: usize,
    ptr: *const c_void,
}

/// `nvtxMemHeapDesc_v1`.
#[repr(C)]
struct HeapDesc {
    ext_compat_id: u16,
    struct_size: u16,
    reserved0: u32,
    usage: u32,
    kind: u32,
    type_specific_desc_size: usize,
    type_specific_desc: *const c_void,
    category: u32,
    message_type: u32,
    message: *const c_char,
}

/// `nvtxMemRegionsRegisterBatch_v1`.
#[repr(C)]
struct RegionsRegisterBatch {
    ext_compat_id: u16,
    struct_size: u16,
    region_type: u32,
    heap: *const c_void,
    region_count: usize,
    region_desc_element_size: usize,
    region_desc_elements: *const c_void,
    region_handle_elements_out: *mut *const c_void,
}

/// `nvtxMemRegionsUnregisterBatch_v1` (its references are `nvtxMemRegionRef_t`, a union of
/// pointers: here, pointers).
#[repr(C)]
struct RegionsUnregisterBatch {
    ext_compat_id: u16,
    struct_size: u16,
    ref_type: u32,
    ref_count: usize,
    ref_element_size: usize,
    ref_elements: *const *const c_void,
}

/// `nvtxExtModuleSegment_t`.
#[repr(C)]
struct ModuleSegment {
    segment_id: usize,
    slot_count: usize,
    function_slots: *mut usize,
}

/// `nvtxExtModuleInfo_t`.
#[repr(C)]
struct ModuleInfo {
    nvtx_ver: u16,
    struct_size: u16,
    module_id: u16,
    compat_id: u16,
    segments_count: usize,
    segments: *mut ModuleSegment,
    get_export_function: Option<unsafe extern "C" fn(u32) -> isize>,
    ext_info: *const c_void,
}

/// `NvtxExportTableCallbacks`.
#[repr(C)]
struct ExportTableCallbacks {
    struct_size: usize,
    get_module_function_table: unsafe extern "C" fn(u32, *mut *const usize, *mut c_uint) -> c_int,
}

/// `NvtxExportTableVersionInfo`.
#[repr(C)]
struct ExportTableVersionInfo {
    struct_size: usize,
    version: u32,
    reserved0: u32,
    set_injection_nvtx_version: unsafe extern "C" fn(u32),
}

// The sizes the 64-bit headers give these structures.
#[cfg(target_pointer_width = "64")]
const _: () = {
    assert!(std::mem::size_of::<VirtualRange>() == 16);
    assert!(std::mem::size_of::<HeapDesc>() == 48);
    assert!(std::mem::size_of::<RegionsRegisterBatch>() == 48);
    assert!(std::mem::size_of::<RegionsUnregisterBatch>() == 32);
    assert!(std::mem::size_of::<ModuleSegment>() == 24);
    assert!(std::mem::size_of::<ModuleInfo>() == 40);
    assert!(std::mem::size_of::<ExportTableCallbacks>() == 16);
    assert!(std::mem::size_of::<ExportTableVersionInfo>() == 24);
};

type HeapRegisterFn = unsafe extern "C" fn(*const c_void, *const HeapDesc) -> *const c_void;
type HeapUnregisterFn = unsafe extern "C" fn(*const c_void, *const c_void);
type RegionsRegisterFn = unsafe extern "C" fn(*const c_void, *const RegionsRegisterBatch);
type RegionsUnregisterFn = unsafe extern "C" fn(*const c_void, *const RegionsUnregisterBatch);
type DomainCreateFn = unsafe extern "C" fn(*const c_char) -> *const c_void;
type InitializeCoreFn = unsafe extern "C" fn(unsafe extern "C" fn(u32) -> *const c_void) -> c_int;
type InitializeExtensionFn = unsafe extern "C" fn(*mut ModuleInfo) -> c_int;

/// A heap the tool registered (its handle, opaque here).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Heap(usize);

/// The attached tool's Mem functions and the domain they are called with.
struct Tool {
    domain: usize,
    heap_register: HeapRegisterFn,
    heap_unregister: HeapUnregisterFn,
    regions_register: RegionsRegisterFn,
    regions_unregister: RegionsUnregisterFn,
}

const UNDECIDED: u8 = 0;
const NO_TOOL: u8 = 1;
const ATTACHED: u8 = 2;

/// Whether a tool is attached, once decided: what every call reads first.
static STATE: AtomicU8 = AtomicU8::new(UNDECIDED);
static TOOL: OnceLock<Option<Tool>> = OnceLock::new();

/// The core protocol's function slots, one row per module (CORE to SYNC), which the tool fills.
static CORE_SLOTS: [[AtomicUsize; CORE_TABLE_LEN]; 6] = [const { [const { AtomicUsize::new(0) }; CORE_TABLE_LEN] }; 6];
/// The module tables handed to the tool: addresses of `CORE_SLOTS` entries, null at both ends.
static CORE_TABLES: OnceLock<[[usize; CORE_TABLE_LEN]; 6]> = OnceLock::new();
/// The Mem extension's module state (index 0) and function slots (the rest).
static MEM_SLOTS: [AtomicUsize; MEM_SLOT_COUNT + 1] = [const { AtomicUsize::new(0) }; MEM_SLOT_COUNT + 1];

static CALLBACKS: ExportTableCallbacks =
    ExportTableCallbacks { struct_size: std::mem::size_of::<ExportTableCallbacks>(), get_module_function_table: module_function_table };
static VERSION_INFO: ExportTableVersionInfo = ExportTableVersionInfo {
    struct_size: std::mem::size_of::<ExportTableVersionInfo>(),
    version: NVTX_VERSION as u32,
    reserved0: 0,
    set_injection_nvtx_version: injection_nvtx_version,
};

/// `nvtxGetExportTable`: what the tool's core initialization asks for.
unsafe extern "C" fn export_table(id: u32) -> *const c_void {
    match id {
        ETID_CALLBACKS => &CALLBACKS as *const ExportTableCallbacks as *const c_void,
        ETID_VERSIONINFO => &VERSION_INFO as *const ExportTableVersionInfo as *const c_void,
        _ => std::ptr::null(),
    }
}

/// `GetModuleFunctionTable`: the table of slots of core module `module`.
unsafe extern "C" fn module_function_table(module: u32, out_table: *mut *const usize, out_size: *mut c_uint) -> c_int {
    let Some(row) = CORE_MODULES.iter().position(|&(id, _)| id == module) else { return 0 };
    let Some(tables) = CORE_TABLES.get() else { return 0 };
    if !out_size.is_null() {
        // SAFETY: the tool passes a pointer to an unsigned int it owns (or NULL, checked).
        unsafe { *out_size = CORE_MODULES[row].1 as c_uint };
    }
    if !out_table.is_null() {
        // SAFETY: the tool passes a pointer to a table pointer it owns (or NULL, checked).
        unsafe { *out_table = tables[row].as_ptr() };
    }
    1
}

/// `SetInjectionNvtxVersion`: reserved, as in NVTX's own implementation.
unsafe extern "C" fn injection_nvtx_version(_version: u32) {}

/// Whether a tool is attached (the first call decides, loading it). One relaxed atomic load
/// when there is none.
#[inline(always)]
pub fn active() -> bool {
    STATE.load(Ordering::Relaxed) != NO_TOOL && tool().is_some()
}

#[cold]
#[inline(never)]
fn tool() -> Option<&'static Tool> {
    TOOL.get_or_init(|| {
        let switched_off = std::env::var_os(SWITCH_VARIABLE).is_some_and(|value| value == "0");
        let tool = match switched_off {
            true => None,
            false => std::env::var_os(INJECTION_VARIABLE).filter(|path| !path.is_empty()).and_then(|path| attach(&path)),
        };
        STATE.store(if tool.is_some() { ATTACHED } else { NO_TOOL }, Ordering::Relaxed);
        tool
    })
    .as_ref()
}

/// Loads and initializes the injection library at `path`: None where it does not load or
/// lacks what the Mem extension needs.
fn attach(path: &std::ffi::OsStr) -> Option<Tool> {
    use std::os::unix::ffi::OsStrExt;
    let path_c = std::ffi::CString::new(path.as_bytes()).ok()?;
    // SAFETY: `path_c` is a NUL-terminated path; dlopen has no other precondition. The handle
    // is never closed: the tool's functions are called for the life of the process.
    let handle = unsafe { libc::dlopen(path_c.as_ptr(), libc::RTLD_LAZY) };
    if handle.is_null() {
        log::warn!("NVTX: {} names {path:?}, which does not load: pools stay opaque to the tool", INJECTION_VARIABLE);
        return None;
    }
    let domain = initialize_core(handle);
    let tool = initialize_mem(handle, domain);
    match &tool {
        Some(tool) => log::info!(
            "NVTX: tool {path:?} attached (domain {}): pools register their chunks as heaps and their blocks as regions",
            if tool.domain == 0 { "default" } else { "rmm-rs" }
        ),
        None => log::warn!("NVTX: tool {path:?} offers no Mem extension (heap and region registration): pools stay opaque to it"),
    }
    tool
}

/// The address of the exported function `name` of `handle`, if it has one.
fn symbol(handle: *mut c_void, name: &CStr) -> Option<usize> {
    // SAFETY: `handle` came from dlopen and is never closed; `name` is NUL-terminated.
    let address = unsafe { libc::dlsym(handle, name.as_ptr()) } as usize;
    (address != 0).then_some(address)
}

/// The core protocol: hands the tool the module tables and makes the "rmm-rs" domain. The
/// domain handle, or 0 (the default domain) where the tool has no core entry point, fails it
/// or offers no `nvtxDomainCreateA`.
fn initialize_core(handle: *mut c_void) -> usize {
    let Some(init) = symbol(handle, c"InitializeInjectionNvtx2") else { return 0 };
    CORE_TABLES.get_or_init(|| {
        let mut tables = [[0usize; CORE_TABLE_LEN]; 6];
        for (row, &(_, size)) in CORE_MODULES.iter().enumerate() {
            for id in 1..size {
                tables[row][id] = CORE_SLOTS[row][id].as_ptr() as usize;
            }
        }
        tables
    });
    // SAFETY: the tool exports InitializeInjectionNvtx2 with this signature (nvtxTypes.h:
    // NvtxInitializeInjectionNvtxFunc_t); the address is non-null.
    let init: InitializeCoreFn = unsafe { std::mem::transmute::<usize, InitializeCoreFn>(init) };
    // SAFETY: `export_table` and everything it hands out are statics that live as long as the
    // process, laid out as nvtxTypes.h declares them.
    if unsafe { init(export_table) } == 0 {
        log::debug!("NVTX: the tool's InitializeInjectionNvtx2 failed: the default domain");
        return 0;
    }
    let row = CORE_MODULES.iter().position(|&(id, _)| id == MODULE_CORE2).unwrap_or(0);
    let create = CORE_SLOTS[row][CBID_CORE2_DOMAIN_CREATE_A].load(Ordering::Acquire);
    if create == 0 {
        log::debug!("NVTX: the tool left nvtxDomainCreateA's slot empty: the default domain");
        return 0;
    }
    // SAFETY: the tool stored its nvtxDomainCreateA (nvtxTypes.h: nvtxDomainCreateA_impl_fntype)
    // in CORE2's slot 12; it is non-null.
    let create: DomainCreateFn = unsafe { std::mem::transmute::<usize, DomainCreateFn>(create) };
    // SAFETY: the name is a NUL-terminated string that lives as long as the process.
    unsafe { create(c"rmm-rs".as_ptr()) as usize }
}

/// The Mem extension's initialization: the tool fills the slots of one segment; its four heap
/// and region functions must be there.
fn initialize_mem(handle: *mut c_void, domain: usize) -> Option<Tool> {
    let init = symbol(handle, c"InitializeInjectionNvtxExtension")?;
    // SAFETY: the tool exports InitializeInjectionNvtxExtension with this signature
    // (nvtxExtTypes.h: NvtxExtInitializeInjectionFunc_t); the address is non-null.
    let init: InitializeExtensionFn = unsafe { std::mem::transmute::<usize, InitializeExtensionFn>(init) };
    // The tool may keep these: they live as long as the process (made once: `tool()` runs once).
    let segment = Box::leak(Box::new(ModuleSegment {
        segment_id: 1,
        slot_count: MEM_SLOT_COUNT,
        function_slots: MEM_SLOTS[1..].as_ptr() as *mut usize,
    }));
    let info = Box::leak(Box::new(ModuleInfo {
        nvtx_ver: NVTX_VERSION,
        struct_size: std::mem::size_of::<ModuleInfo>() as u16,
        module_id: MODULE_ID_MEM,
        compat_id: COMPAT_ID_MEM,
        segments_count: 1,
        segments: segment,
        get_export_function: None,
        ext_info: std::ptr::null(),
    }));
    MEM_SLOTS[0].store(MODULE_STARTING, Ordering::Release);
    // SAFETY: `info` and its segment are laid out as nvtxExtTypes.h declares them and live as
    // long as the process; the slots are atomics of pointer size the tool may write.
    let initialized = unsafe { init(info) } != 0;
    MEM_SLOTS[0].store(MODULE_LOADED, Ordering::Release);
    if !initialized {
        return None;
    }
    let filled = |index: usize| !matches!(MEM_SLOTS[index + 1].load(Ordering::Acquire), SLOT_FRESH | SLOT_DISABLED);
    // NVTX's headers read callback id N from slot N (id 0 is invalid); compute-sanitizer
    // 2025.3 (CUDA 13.0) fills id N into slot N - 1: its nvtxMemHeapRegister sits in slot 0,
    // which the headers' numbering leaves empty (found on an H200: slot 1 was its
    // nvtxMemHeapUnregister). A filled slot 0 says which numbering the tool uses.
    let shift = usize::from(filled(0));
    let slot = |id: usize| {
        let index = id - shift;
        filled(index).then(|| MEM_SLOTS[index + 1].load(Ordering::Acquire))
    };
    // SAFETY (each transmute): the tool stored, in the slot of each callback id, its function
    // of that id, whose signature nvtxExtImplMem_v1.h gives; the addresses are real ones (not
    // 0 or 1).
    unsafe {
        Some(Tool {
            domain,
            heap_register: std::mem::transmute::<usize, HeapRegisterFn>(slot(CBID_HEAP_REGISTER)?),
            heap_unregister: std::mem::transmute::<usize, HeapUnregisterFn>(slot(CBID_HEAP_UNREGISTER)?),
            regions_register: std::mem::transmute::<usize, RegionsRegisterFn>(slot(CBID_REGIONS_REGISTER)?),
            regions_unregister: std::mem::transmute::<usize, RegionsUnregisterFn>(slot(CBID_REGIONS_UNREGISTER)?),
        })
    }
}

/// The attached tool, if any (one relaxed load when there is none). None too once the process
/// exits: the tool may be gone before the last frees.
#[inline(always)]
fn attached() -> Option<&'static Tool> {
    if STATE.load(Ordering::Relaxed) == NO_TOOL || super::process_exiting() {
        return None;
    }
    tool()
}

/// `name` as the sanitizer accepts it: printable ASCII (anything else becomes '?'), 1 to 49
/// characters, NUL-terminated.
fn ascii_name(name: &str) -> [u8; NAME_MAX + 1] {
    let mut out = [0u8; NAME_MAX + 1];
    let name = if name.is_empty() { "rmm-rs" } else { name };
    for (slot, c) in out.iter_mut().zip(name.chars().take(NAME_MAX)) {
        *slot = if c.is_ascii() && !c.is_ascii_control() { c as u8 } else { b'?' };
    }
    out
}

/// Registers `[base, base + size)`, memory of the device from upstream, as a heap of a
/// suballocator named `name`: accesses inside it outside registered regions are errors to the
/// tool. None without a tool, or when the tool refuses.
pub fn heap_register(base: usize, size: usize, name: &str) -> Option<Heap> {
    let tool = attached()?;
    let range = VirtualRange { size, ptr: base as *const c_void };
    let name = ascii_name(name);
    let desc = HeapDesc {
        ext_compat_id: COMPAT_ID_MEM,
        struct_size: std::mem::size_of::<HeapDesc>() as u16,
        reserved0: 0,
        usage: HEAP_USAGE_SUB_ALLOCATOR,
        kind: MEM_TYPE_VIRTUAL_ADDRESS,
        type_specific_desc_size: std::mem::size_of::<VirtualRange>(),
        type_specific_desc: &range as *const VirtualRange as *const c_void,
        category: 0,
        message_type: MESSAGE_TYPE_ASCII,
        message: name.as_ptr() as *const c_char,
    };
    // SAFETY: `desc`, the range and the name it points to live across the call and are laid
    // out as nvToolsExtMem.h declares; the function is the tool's nvtxMemHeapRegister.
    let handle = unsafe { (tool.heap_register)(tool.domain as *const c_void, &desc) } as usize;
    log::debug!(
        "NVTX: heap {base:#x}+{size} ({}) registered: {handle:#x}",
        String::from_utf8_lossy(&name[..name.iter().position(|&b| b == 0).unwrap_or(NAME_MAX)])
    );
    // 0 and -1 are what NVTX itself answers without a tool.
    (handle != 0 && handle != usize::MAX).then_some(Heap(handle))
}

/// Unregisters `heap` (and with it whatever regions it still holds).
pub fn heap_unregister(heap: Heap) {
    let Some(tool) = attached() else { return };
    log::debug!("NVTX: heap {:#x} unregistered", heap.0);
    // SAFETY: `heap` is a handle this tool's nvtxMemHeapRegister returned.
    unsafe { (tool.heap_unregister)(tool.domain as *const c_void, heap.0 as *const c_void) }
}

/// Registers `[addr, addr + size)`, inside `heap`, as handed out.
pub fn region_register(heap: Heap, addr: usize, size: usize) {
    let Some(tool) = attached() else { return };
    log::trace!("NVTX: region {addr:#x}+{size} registered in heap {:#x}", heap.0);
    let range = VirtualRange { size, ptr: addr as *const c_void };
    let batch = RegionsRegisterBatch {
        ext_compat_id: COMPAT_ID_MEM,
        struct_size: std::mem::size_of::<RegionsRegisterBatch>() as u16,
        region_type: MEM_TYPE_VIRTUAL_ADDRESS,
        heap: heap.0 as *const c_void,
        region_count: 1,
        region_desc_element_size: std::mem::size_of::<VirtualRange>(),
        region_desc_elements: &range as *const VirtualRange as *const c_void,
        region_handle_elements_out: std::ptr::null_mut(),
    };
    // SAFETY: the batch and its range live across the call, laid out as nvToolsExtMem.h
    // declares (no handles asked back: allowed for virtual addresses); the function is the
    // tool's nvtxMemRegionsRegister.
    unsafe { (tool.regions_register)(tool.domain as *const c_void, &batch) }
}

/// Unregisters the region that starts at `addr` (a freed block).
pub fn region_unregister(addr: usize) {
    let Some(tool) = attached() else { return };
    log::trace!("NVTX: region {addr:#x} unregistered");
    let reference = addr as *const c_void;
    let batch = RegionsUnregisterBatch {
        ext_compat_id: COMPAT_ID_MEM,
        struct_size: std::mem::size_of::<RegionsUnregisterBatch>() as u16,
        ref_type: REGION_REF_POINTER,
        ref_count: 1,
        ref_element_size: std::mem::size_of::<*const c_void>(),
        ref_elements: &reference,
    };
    // SAFETY: the batch and the address (pointer-sized, as the references' union) live
    // across the call; the function is the tool's nvtxMemRegionsUnregister.
    unsafe { (tool.regions_unregister)(tool.domain as *const c_void, &batch) }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The test process runs with no tool (no NVTX_INJECTION64_PATH): the first call decides
    /// so, every later one reads the cached decision (one relaxed load), and every call is a
    /// no-op.
    #[test]
    fn without_a_tool_every_call_is_a_no_op_after_one_decision() {
        if std::env::var_os(INJECTION_VARIABLE).is_some() {
            eprintln!("skipped: {INJECTION_VARIABLE} is set for this test process");
            return;
        }
        assert!(!active());
        assert_eq!(STATE.load(Ordering::Relaxed), NO_TOOL, "the decision is cached");
        assert!(TOOL.get().is_some_and(Option::is_none));
        assert_eq!(heap_register(0x1000, 4096, "rmm-rs test"), None);
        heap_unregister(Heap(0x1000));
        region_register(Heap(0x1000), 0x1000, 16);
        region_unregister(0x1000);
        for _ in 0..1_000 {
            assert!(!active());
        }
        assert_eq!(MEM_SLOTS[0].load(Ordering::Relaxed), 0, "no extension initialization was attempted");
    }

    /// A path that does not load, and a library without NVTX's entry points, are no tool.
    #[test]
    fn a_library_without_the_entry_points_is_no_tool() {
        assert!(attach(std::ffi::OsStr::new("/nonexistent/libnvtx-tool.so")).is_none());
        assert!(attach(std::ffi::OsStr::new("libc.so.6")).is_none());
    }

    #[test]
    fn names_are_printable_ascii_of_at_most_49_characters() {
        let name = ascii_name("rmm-rs pool (device 0)");
        assert_eq!(CStr::from_bytes_until_nul(&name).unwrap().to_str().unwrap(), "rmm-rs pool (device 0)");
        let long = ascii_name(&"x".repeat(80));
        assert_eq!(CStr::from_bytes_until_nul(&long).unwrap().to_bytes().len(), NAME_MAX);
        let odd = ascii_name("a\u{e9}\n");
        assert_eq!(CStr::from_bytes_until_nul(&odd).unwrap().to_str().unwrap(), "a??");
        assert_eq!(CStr::from_bytes_until_nul(&ascii_name("")).unwrap().to_str().unwrap(), "rmm-rs");
    }
}
