//! The registry of resource and adaptor kinds: for each, its name, its role in a stack, the
//! parameters it takes with their defaults, and how to build it. It is the one list of kinds:
//! the stack-spec language (`ownership::spec`) parses and prints layers from it, the C create
//! functions build through it (so a C call and a spec with the same values build the same
//! thing, and an omitted value means the same there as here), and the tests, the C++ header's
//! list of classes and `rmm-replay --help` are checked against or generated from it.
//!
//! Adding a kind: a row in `KINDS`; nothing else keeps a list (docs/src/contributing.md says
//! what else a new kind brings: tests and docs).

use super::adaptors::{AlignedAdaptor, LimitingAdaptor, LoggingAdaptor, PrefetchAdaptor, StatisticsAdaptor, TrackingAdaptor};
use super::{
    expandable_resource, ArenaResource, AsyncResource, BinningResource, DirectResource, ExpandableOptions, FixedSizeResource,
    MemoryResource, PoolResource, SystemResource,
};
use crate::error::{Error, Result};
use crate::platform::{MemoryKind, PoolProps};
use crate::units::spec_size;
use std::sync::Arc;

/// A release threshold that keeps everything (`SIZE_MAX` in the C API, `unlimited` in specs).
pub const UNLIMITED: usize = usize::MAX;

/// What a kind does with requests, which decides where it may stand in a stack.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Role {
    /// Passes every request on to the next layer.
    Adaptor,
    /// Serves requests from memory it takes from the next layer.
    Suballocator,
    /// Takes memory from the driver itself: the last layer.
    Device,
}

/// How a parameter is written in a spec.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Type {
    /// Bytes: `4096`, `256KiB`, `8GiB`.
    Size,
    /// Bytes, or `unlimited` (keep everything).
    Threshold,
    /// A whole number that is not a size.
    Count,
    /// A power-of-two exponent from 0 to 40.
    Exponent,
    /// `true` or `false` (also 1/0, yes/no, on/off).
    Flag,
    /// A list of sizes: `[1MiB,4MiB]`.
    Sizes,
    /// A list of device numbers: `[1,2]`.
    Devices,
    /// A list of CUDA handle type names: `[posix_file_descriptor,fabric]`.
    HandleTypes,
    /// Text; in a spec, `{device}` in it stands for the device the stack is built on.
    Path,
}

impl Type {
    /// Whether `value` is of this type.
    pub fn holds(self, value: &Value) -> bool {
        matches!(
            (self, value),
            (Type::Size | Type::Threshold, Value::Size(_))
                | (Type::Count, Value::Count(_))
                | (Type::Exponent, Value::Exponent(_))
                | (Type::Flag, Value::Flag(_))
                | (Type::Sizes, Value::Sizes(_))
                | (Type::Devices, Value::Devices(_))
                | (Type::HandleTypes, Value::HandleTypes(_))
                | (Type::Path, Value::Path(_))
        )
    }
}

/// The value of one parameter.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Value {
    /// A `Type::Size` or `Type::Threshold`.
    Size(usize),
    /// A `Type::Count`.
    Count(usize),
    /// A `Type::Exponent`.
    Exponent(i8),
    /// A `Type::Flag`.
    Flag(bool),
    /// A `Type::Sizes`.
    Sizes(Vec<usize>),
    /// A `Type::Devices`.
    Devices(Vec<i32>),
    /// A `Type::HandleTypes`: `RMM_HANDLE_TYPE_*` bits.
    HandleTypes(u32),
    /// A `Type::Path`; None where the kind's own default applies (the logging adaptor's
    /// `RMM_LOG_FILE`).
    Path(Option<String>),
}

impl Value {
    /// Whether a spec's canonical form leaves the value out: empty lists, no handle types,
    /// no path. Their absence reads back as the same value.
    pub fn is_empty(&self) -> bool {
        match self {
            Value::Sizes(list) => list.is_empty(),
            Value::Devices(list) => list.is_empty(),
            Value::HandleTypes(bits) => *bits == 0,
            Value::Path(path) => path.is_none(),
            _ => false,
        }
    }
}

/// One parameter of a kind.
#[derive(Debug)]
pub struct Key {
    /// Its name in a spec.
    pub name: &'static str,
    /// How it is written.
    pub ty: Type,
    /// What an omitted value means, in a spec and in the C create functions that do not take
    /// it; None: it must be given.
    pub default: Option<Value>,
}

impl Key {
    const fn required(name: &'static str, ty: Type) -> Key {
        Key { name, ty, default: None }
    }

    const fn or(name: &'static str, ty: Type, default: Value) -> Key {
        Key { name, ty, default: Some(default) }
    }
}

/// The values of a kind's parameters, one per key in the kind's order.
#[derive(Debug, Clone)]
pub struct Params {
    kind: &'static Kind,
    values: Vec<Value>,
}

impl PartialEq for Params {
    fn eq(&self, other: &Params) -> bool {
        std::ptr::eq(self.kind, other.kind) && self.values == other.values
    }
}

impl Eq for Params {}

/// What building a kind may need besides its parameters.
pub struct Place {
    /// The layer below (None for device resources).
    pub upstream: Option<Arc<dyn MemoryResource>>,
    /// The device a device resource takes memory from.
    pub device: i32,
    /// Whether something else reports the stack's leaks at exit (a spec's `report`): a
    /// tracking adaptor then keeps its list to itself.
    pub leaks_reported: bool,
}

impl Place {
    /// Over `upstream`, on its device.
    pub fn over(upstream: Arc<dyn MemoryResource>) -> Place {
        Place { device: upstream.device(), upstream: Some(upstream), leaks_reported: false }
    }

    /// At the bottom of a stack on `device`.
    pub fn on(device: i32) -> Place {
        Place { upstream: None, device, leaks_reported: false }
    }

    fn upstream(&self, kind: &Kind) -> Result<Arc<dyn MemoryResource>> {
        self.upstream.clone().ok_or_else(|| Error::Internal(format!("{} has no upstream", kind.name)))
    }
}

/// A values check no single value shows: which keys to point at (the first one given; the
/// layer's name when none is) and what to say.
pub struct Refusal {
    /// Keys to point at, in order of preference.
    pub at: &'static [&'static str],
    /// The message.
    pub message: String,
}

/// Builds a kind from its parameters.
pub type Builder = fn(&Params, &Place) -> Result<Arc<dyn MemoryResource>>;

/// Checks a kind's values together (`Kind::check`).
pub type Check = fn(&Params) -> std::result::Result<(), Refusal>;

/// One resource or adaptor kind.
#[derive(Debug)]
pub struct Kind {
    /// Its name: in specs, from `rmmResourceGetName`, in logs and snapshots.
    pub name: &'static str,
    /// What it does with requests.
    pub role: Role,
    /// Its parameters, in the order a spec's canonical form gives them.
    pub keys: &'static [Key],
    /// How to build it; None for kinds that need the caller's functions (the C API alone
    /// makes them), which specs cannot name.
    pub build: Option<Builder>,
    /// What a spec refuses that each value alone allows, so that the message can point at
    /// the text; the C create functions leave the same values to the resource itself.
    pub check: Option<Check>,
    /// Its classes in `include/rmm/mr/` (RAPIDS' names), which `per_device_resource.hpp`
    /// recognises; empty where there is none.
    pub cxx_classes: &'static [&'static str],
}

impl Kind {
    /// The kind called `name` (as written: specs lower-case it first).
    pub fn named(name: &str) -> Option<&'static Kind> {
        KINDS.iter().find(|kind| kind.name == name)
    }

    /// `values` by key name, the rest from the defaults; a name the kind does not take, a
    /// value of another type or a required key left out is an internal error (the callers
    /// are this crate's).
    pub fn params(&'static self, values: impl IntoIterator<Item = (&'static str, Value)>) -> Result<Params> {
        let mut given: Vec<Option<Value>> = self.keys.iter().map(|key| key.default.clone()).collect();
        for (name, value) in values {
            let at = self.keys.iter().position(|key| key.name == name && key.ty.holds(&value));
            let at = at.ok_or_else(|| Error::Internal(format!("{} takes no {name} of {value:?}", self.name)))?;
            given[at] = Some(value);
        }
        let values = given
            .into_iter()
            .zip(self.keys)
            .map(|(value, key)| value.ok_or_else(|| Error::Internal(format!("{} needs {}", self.name, key.name))));
        Ok(Params { kind: self, values: values.collect::<Result<_>>()? })
    }
}

/// Builds the kind called `name` with `values` (the rest at their defaults) at `place`: what
/// the C create functions do, so that they and specs share one builder and one set of
/// defaults. An unknown name or key is an internal error (the callers are this crate's).
pub fn build(name: &str, values: impl IntoIterator<Item = (&'static str, Value)>, place: &Place) -> Result<Arc<dyn MemoryResource>> {
    let kind = Kind::named(name).ok_or_else(|| Error::Internal(format!("no kind {name}")))?;
    kind.params(values)?.build(place)
}

impl Params {
    /// The kind these are the parameters of.
    pub fn kind(&self) -> &'static Kind {
        self.kind
    }

    /// The keys with their values, in the kind's order.
    pub fn iter(&self) -> impl Iterator<Item = (&'static Key, &Value)> {
        self.kind.keys.iter().zip(&self.values)
    }

    /// Sets `key` (one of the kind's, `value` of its type).
    pub fn set(&mut self, key: &str, value: Value) -> Result<()> {
        let at = self.kind.keys.iter().position(|k| k.name == key && k.ty.holds(&value));
        let at = at.ok_or_else(|| Error::Internal(format!("{} takes no {key} of {value:?}", self.kind.name)))?;
        self.values[at] = value;
        Ok(())
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Result<&Value> {
        let at = self.kind.keys.iter().position(|k| k.name == key);
        at.map(|at| &self.values[at]).ok_or_else(|| Error::Internal(format!("{} takes no {key}", self.kind.name)))
    }

    fn mismatch(&self, key: &str) -> Error {
        Error::Internal(format!("{}: {key} is not of the type its builder reads", self.kind.name))
    }

    /// A `Size` or `Count` value.
    pub fn size(&self, key: &str) -> Result<usize> {
        match self.get(key)? {
            Value::Size(bytes) | Value::Count(bytes) => Ok(*bytes),
            _ => Err(self.mismatch(key)),
        }
    }

    fn exponent(&self, key: &str) -> Result<i8> {
        match self.get(key)? {
            Value::Exponent(exponent) => Ok(*exponent),
            _ => Err(self.mismatch(key)),
        }
    }

    fn flag(&self, key: &str) -> Result<bool> {
        match self.get(key)? {
            Value::Flag(flag) => Ok(*flag),
            _ => Err(self.mismatch(key)),
        }
    }

    fn sizes(&self, key: &str) -> Result<&[usize]> {
        match self.get(key)? {
            Value::Sizes(sizes) => Ok(sizes),
            _ => Err(self.mismatch(key)),
        }
    }

    fn devices(&self, key: &str) -> Result<&[i32]> {
        match self.get(key)? {
            Value::Devices(devices) => Ok(devices),
            _ => Err(self.mismatch(key)),
        }
    }

    fn handle_types(&self, key: &str) -> Result<u32> {
        match self.get(key)? {
            Value::HandleTypes(bits) => Ok(*bits),
            _ => Err(self.mismatch(key)),
        }
    }

    fn path(&self, key: &str) -> Result<Option<&str>> {
        match self.get(key)? {
            Value::Path(path) => Ok(path.as_deref()),
            _ => Err(self.mismatch(key)),
        }
    }

    /// Builds the kind at `place`.
    pub fn build(&self, place: &Place) -> Result<Arc<dyn MemoryResource>> {
        let build = self.kind.build.ok_or_else(|| Error::Internal(format!("{} is built by the C API alone", self.kind.name)))?;
        build(self, place)
    }

    /// The kind's own check of these values together.
    pub fn check(&self) -> std::result::Result<(), Refusal> {
        self.kind.check.map_or(Ok(()), |check| check(self))
    }
}

use Type::*;

/// Every kind, adaptors first, then suballocators, then device resources (the order in which
/// messages and help texts list them).
pub static KINDS: [Kind; 22] = [
    Kind {
        name: "statistics",
        role: Role::Adaptor,
        keys: &[],
        build: Some(|p, place| Ok(StatisticsAdaptor::new(place.upstream(p.kind)?))),
        check: None,
        cxx_classes: &["statistics_resource_adaptor"],
    },
    Kind {
        name: "tracking",
        role: Role::Adaptor,
        // `stacks`: a backtrace per allocation (the call site of `RMM_ALLOC` is always kept).
        keys: &[Key::or("stacks", Flag, Value::Flag(false))],
        build: Some(|p, place| {
            let (upstream, stacks) = (place.upstream(p.kind)?, p.flag("stacks")?);
            Ok(match place.leaks_reported {
                true => TrackingAdaptor::new_unreported(upstream, stacks),
                false => TrackingAdaptor::new(upstream, stacks),
            })
        }),
        check: None,
        cxx_classes: &["tracking_resource_adaptor"],
    },
    Kind {
        name: "limiting",
        role: Role::Adaptor,
        keys: &[Key::required("limit", Size)],
        build: Some(|p, place| Ok(LimitingAdaptor::new(place.upstream(p.kind)?, p.size("limit")?)?)),
        check: None,
        cxx_classes: &["limiting_resource_adaptor"],
    },
    Kind {
        name: "aligned",
        role: Role::Adaptor,
        // RAPIDS' aligned_resource_adaptor threshold (64 KiB).
        keys: &[Key::required("alignment", Size), Key::or("threshold", Size, Value::Size(64 << 10))],
        build: Some(|p, place| Ok(AlignedAdaptor::new(place.upstream(p.kind)?, p.size("alignment")?, p.size("threshold")?)?)),
        check: None,
        cxx_classes: &["aligned_resource_adaptor"],
    },
    Kind {
        name: "logging",
        role: Role::Adaptor,
        // No path: the file `RMM_LOG_FILE` names, as `rmmLoggingAdaptorCreate(NULL)`.
        keys: &[Key::or("path", Path, Value::Path(None))],
        build: Some(|p, place| Ok(LoggingAdaptor::new(place.upstream(p.kind)?, p.path("path")?)?)),
        check: None,
        cxx_classes: &["logging_resource_adaptor"],
    },
    Kind {
        name: "prefetch",
        role: Role::Adaptor,
        keys: &[],
        build: Some(|p, place| Ok(PrefetchAdaptor::new(place.upstream(p.kind)?))),
        check: None,
        cxx_classes: &["prefetch_resource_adaptor"],
    },
    Kind {
        name: "failure_callback",
        role: Role::Adaptor,
        keys: &[],
        build: None,
        check: None,
        cxx_classes: &["failure_callback_resource_adaptor<>", "failure_callback_resource_adaptor<rmm::bad_alloc>"],
    },
    Kind {
        name: "pool",
        role: Role::Suballocator,
        keys: &[Key::or("initial", Size, Value::Size(0)), Key::or("maximum", Size, Value::Size(0))],
        build: Some(|p, place| Ok(Arc::new(PoolResource::new(place.upstream(p.kind)?, p.size("initial")?, p.size("maximum")?)?))),
        check: Some(initial_below_maximum),
        cxx_classes: &["pool_memory_resource"],
    },
    Kind {
        name: "binning",
        role: Role::Suballocator,
        // `bins`: extra fixed-size bins, one per size, as `rmmBinningResourceAddBin(.., NULL)`.
        keys: &[
            Key::or("min", Exponent, Value::Exponent(8)),
            Key::or("max", Exponent, Value::Exponent(20)),
            Key::or("bins", Sizes, Value::Sizes(Vec::new())),
        ],
        build: Some(|p, place| {
            let binning = BinningResource::new(place.upstream(p.kind)?, p.exponent("min")?, p.exponent("max")?)?;
            for bin in p.sizes("bins")? {
                binning.add_bin(*bin, None)?;
            }
            Ok(Arc::new(binning))
        }),
        check: Some(|p| {
            let (min, max) = (p.exponent("min").unwrap_or(0), p.exponent("max").unwrap_or(0));
            match min > max {
                true => Err(Refusal { at: &["max", "min"], message: format!("binning: min={min} is above max={max}") }),
                false => Ok(()),
            }
        }),
        cxx_classes: &["binning_memory_resource"],
    },
    Kind {
        name: "arena",
        role: Role::Suballocator,
        keys: &[Key::or("size", Size, Value::Size(0))],
        build: Some(|p, place| Ok(Arc::new(ArenaResource::new(place.upstream(p.kind)?, p.size("size")?)?))),
        check: None,
        cxx_classes: &["arena_memory_resource"],
    },
    Kind {
        name: "fixed_size",
        role: Role::Suballocator,
        keys: &[Key::or("block", Size, Value::Size(1 << 20)), Key::or("prealloc", Count, Value::Count(128))],
        build: Some(|p, place| Ok(Arc::new(FixedSizeResource::new(place.upstream(p.kind)?, p.size("block")?, p.size("prealloc")?)?))),
        check: Some(|p| match p.size("block") {
            Ok(0) => Err(Refusal { at: &["block"], message: "fixed_size: block=0: expected a block size above 0".into() }),
            _ => Ok(()),
        }),
        cxx_classes: &["fixed_size_memory_resource"],
    },
    Kind { name: "callback", role: Role::Device, keys: &[], build: None, check: None, cxx_classes: &["callback_memory_resource"] },
    Kind {
        name: "cuda",
        role: Role::Device,
        keys: &[],
        build: Some(|_, place| Ok(Arc::new(DirectResource::cuda(place.device)?))),
        check: None,
        cxx_classes: &["cuda_memory_resource"],
    },
    Kind {
        name: "managed",
        role: Role::Device,
        keys: &[],
        build: Some(|_, place| Ok(Arc::new(DirectResource::managed(place.device)?))),
        check: None,
        cxx_classes: &["managed_memory_resource"],
    },
    Kind {
        name: "pinned_host",
        role: Role::Device,
        keys: &[],
        build: Some(|_, place| Ok(Arc::new(DirectResource::pinned_host(place.device)?))),
        check: None,
        cxx_classes: &["pinned_host_memory_resource"],
    },
    Kind {
        name: "cuda_async",
        role: Role::Device,
        keys: &[
            Key::or("initial", Size, Value::Size(0)),
            Key::or("release_threshold", Threshold, Value::Size(UNLIMITED)),
            Key::or("handle_types", HandleTypes, Value::HandleTypes(0)),
            Key::or("hw_decompress", Flag, Value::Flag(false)),
        ],
        build: Some(|p, place| {
            let (initial, release_threshold, handle_types) =
                (p.size("initial")?, p.size("release_threshold")?, p.handle_types("handle_types")?);
            let props = PoolProps { kind: MemoryKind::Device, release_threshold, handle_types, hw_decompress: p.flag("hw_decompress")? };
            Ok(Arc::new(AsyncResource::with_props(place.device, initial, &props)?))
        }),
        check: None,
        cxx_classes: &["cuda_async_memory_resource"],
    },
    // Over a pool handle the caller made: the C API alone (a handle has no spec form).
    Kind {
        name: "cuda_async_view",
        role: Role::Device,
        keys: &[],
        build: None,
        check: None,
        cxx_classes: &["cuda_async_view_memory_resource"],
    },
    Kind {
        name: "cuda_async_managed",
        role: Role::Device,
        keys: &[],
        build: Some(|_, place| Ok(Arc::new(AsyncResource::managed(place.device)?))),
        check: None,
        cxx_classes: &["cuda_async_managed_memory_resource"],
    },
    Kind {
        name: "cuda_async_pinned_host",
        role: Role::Device,
        keys: &[Key::or("initial", Size, Value::Size(0)), Key::or("release_threshold", Threshold, Value::Size(UNLIMITED))],
        build: Some(|p, place| {
            let props = PoolProps {
                kind: MemoryKind::PinnedHost,
                release_threshold: p.size("release_threshold")?,
                handle_types: 0,
                hw_decompress: false,
            };
            Ok(Arc::new(AsyncResource::with_props(place.device, p.size("initial")?, &props)?))
        }),
        check: None,
        cxx_classes: &["cuda_async_pinned_host_memory_resource"],
    },
    Kind {
        name: "system",
        role: Role::Device,
        keys: &[],
        build: Some(|_, place| Ok(Arc::new(SystemResource::new(place.device)?))),
        check: None,
        cxx_classes: &["system_memory_resource"],
    },
    Kind {
        name: "sam_headroom",
        role: Role::Device,
        keys: &[Key::required("headroom", Size)],
        build: Some(|p, place| Ok(Arc::new(SystemResource::with_headroom(place.device, p.size("headroom")?)?))),
        check: None,
        cxx_classes: &["sam_headroom_memory_resource"],
    },
    Kind {
        name: "expandable",
        role: Role::Device,
        keys: &[
            Key::or("initial", Size, Value::Size(0)),
            Key::or("maximum", Size, Value::Size(0)),
            Key::or("release_threshold", Threshold, Value::Size(UNLIMITED)),
            Key::or("page_size", Size, Value::Size(0)),
            Key::or("peers", Devices, Value::Devices(Vec::new())),
        ],
        build: Some(|p, place| Ok(Arc::new(expandable_resource(place.device, &expandable_options(p)?)?))),
        check: Some(initial_below_maximum),
        cxx_classes: &[],
    },
];

/// The options of an expandable kind's `p`: for its builder, and for the C API's shareable
/// variant (`rmmIpcExpandableResourceCreate`), which no spec names.
pub fn expandable_options(p: &Params) -> Result<ExpandableOptions> {
    Ok(ExpandableOptions {
        initial_size: p.size("initial")?,
        maximum_size: p.size("maximum")?,
        release_threshold: p.size("release_threshold")?,
        page_size: p.size("page_size")?,
        peers: p.devices("peers")?.to_vec(),
    })
}

/// A pool's or an expandable resource's `initial` above a `maximum` that is not 0.
fn initial_below_maximum(p: &Params) -> std::result::Result<(), Refusal> {
    let (initial, maximum) = (p.size("initial").unwrap_or(0), p.size("maximum").unwrap_or(0));
    match maximum != 0 && initial > maximum {
        true => {
            Err(Refusal { at: &["maximum"], message: format!("initial={} exceeds maximum={}", spec_size(initial), spec_size(maximum)) })
        }
        false => Ok(()),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_kind_is_listed_once_with_defaults_of_its_own_type() {
        for (at, kind) in KINDS.iter().enumerate() {
            assert!(KINDS[..at].iter().all(|other| other.name != kind.name), "{} is listed twice", kind.name);
            for key in kind.keys {
                let fits = key.default.as_ref().is_none_or(|default| key.ty.holds(default));
                assert!(fits, "{}: the default of {} is not a {:?}", kind.name, key.name, key.ty);
            }
        }
        let roles: Vec<Role> = KINDS.iter().map(|kind| kind.role).collect();
        assert!(roles.is_sorted_by_key(|role| *role as u8), "adaptors, then suballocators, then device resources");
    }

    /// The reference of the spec language documents each kind it takes, in a table row that
    /// names every key.
    #[test]
    fn every_kind_a_spec_takes_is_documented_with_its_keys() {
        let path = concat!(env!("CARGO_MANIFEST_DIR"), "/docs/src/configuration.md");
        let doc = std::fs::read_to_string(path).expect("read docs/src/configuration.md");
        for kind in KINDS.iter().filter(|kind| kind.build.is_some()) {
            let row = doc.lines().find(|line| line.starts_with(&format!("| `{}` |", kind.name)));
            let row = row.unwrap_or_else(|| panic!("configuration.md has no row for {}", kind.name));
            for key in kind.keys {
                assert!(row.contains(&format!("`{}`", key.name)), "configuration.md's row for {} does not name {}", kind.name, key.name);
            }
        }
    }

    /// Rust callers of `expandable_resource` take `ExpandableOptions::default()`: the same
    /// defaults as the registry's.
    #[test]
    fn expandable_options_default_to_the_registrys_defaults() {
        let registry = expandable_options(&Kind::named("expandable").unwrap().params([]).unwrap()).unwrap();
        assert_eq!(registry, ExpandableOptions::default());
    }

    #[test]
    fn params_take_defaults_and_refuse_what_the_kind_does_not_take() {
        let pool = Kind::named("pool").unwrap();
        assert_eq!(pool.params([("initial", Value::Size(4096))]).unwrap().size("maximum").unwrap(), 0);
        assert!(pool.params([("limit", Value::Size(1))]).is_err());
        assert!(pool.params([("initial", Value::Count(1))]).is_err(), "a count is not a size");
        assert!(Kind::named("limiting").unwrap().params([]).is_err(), "limit has no default");
    }
}
