//! The stack-spec language: one text that names a resource stack, parsed here and nowhere
//! else. `RMM_ALLOC_CONF`, `rmmConfigure`, `rmmResourceCreateFromSpec`, `rmm-replay
//! --resource` and the Python module's `Resource.from_spec` all read it; the grammar and its
//! examples are documented once, in `docs/src/configuration.md`.
//!
//! ```text
//! spec   := ( KEYWORD SEP )* layer ( SEP layer )*       outermost layer first
//! KEYWORD:= "report" | "async_free" [ ":pending=" BOUND ] | "registered_streams"
//!                                                      each at most once, before the layers
//! BOUND  := SIZE | PERCENT "%"                         bytes of frees waiting on one device
//! SEP    := "/"   ("+" instead when the spec contains a "+", so that values may hold "/")
//! layer  := NAME [ ":" KEY "=" value ( "," KEY "=" value )* ]
//! value  := WORD | "[" WORD ( "," WORD )* "]"
//! ```
//!
//! A stack that does not end in a device resource ends in `cuda`. The `key:value` shorthand
//! that `RMM_ALLOC_CONF` always took (`resource:pool,initial_pool_size:4GiB,stats:1,...`) is
//! recognised by its first key and translated here into the layers it always meant.
//!
//! The layers, their keys and their defaults are the registry's (`resources::kinds`), which
//! the C create functions build through too: an omitted key means what the C API's omitted or
//! zero argument means.

use crate::error::{Error, ErrorKind, Result};
use crate::resources::adaptors::{StatisticsAdaptor, TrackingAdaptor};
use crate::resources::kinds::{self, Kind, Place, Role, Type, Value, KINDS, UNLIMITED};
use crate::resources::{handle_type, MemoryResource};
use crate::units::{self, parse_size, spec_size};
use std::fmt;
use std::sync::Arc;

/// The stack a device gets when nothing configures it: RMM's `cuda_memory_resource`.
pub(crate) const DEFAULT_STACK: &str = "cuda";

/// The CUDA handle types a cuda_async pool can export (`RMM_HANDLE_TYPE_*`), by spec name.
const HANDLE_TYPES: [(&str, u32); 4] = [
    ("posix_file_descriptor", handle_type::POSIX_FILE_DESCRIPTOR),
    ("win32", handle_type::WIN32),
    ("win32_kmt", handle_type::WIN32_KMT),
    ("fabric", handle_type::FABRIC),
];

/// One layer of a resource stack: a kind of the registry (`resources::kinds`) and the values
/// of its parameters.
#[derive(Clone, PartialEq, Eq)]
pub struct Layer {
    params: kinds::Params,
}

impl fmt::Debug for Layer {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.canonical())
    }
}

impl Layer {
    /// The layer of kind `name` with `values`, the other parameters at their defaults; `name`
    /// is a kind the registry can build.
    fn of(name: &str, values: impl IntoIterator<Item = (&'static str, Value)>) -> Result<Layer> {
        let kind = Kind::named(name).ok_or_else(|| Error::Internal(format!("no kind {name}")))?;
        Ok(Layer { params: kind.params(values)? })
    }

    /// The kind's name, e.g. `pool`.
    pub fn name(&self) -> &'static str {
        self.params.kind().name
    }

    /// The kind's parameters.
    pub fn params(&self) -> &kinds::Params {
        &self.params
    }

    fn role(&self) -> Role {
        self.params.kind().role
    }

    /// True for the resources that take memory from the driver themselves (no upstream).
    pub fn is_device(&self) -> bool {
        self.role() == Role::Device
    }

    /// True for the adaptors, which pass every request on to the next layer.
    pub fn is_adaptor(&self) -> bool {
        self.role() == Role::Adaptor
    }

    /// `name:key=value,...` with every parameter spelled out (empty lists, no handle types
    /// and an unset path left out: leaving them out reads back as the same).
    fn canonical(&self) -> String {
        let params = self.params.iter().filter(|(_, value)| !value.is_empty()).map(|(key, value)| {
            let text = match value {
                Value::Size(bytes) => spec_size(*bytes),
                Value::Count(count) => count.to_string(),
                Value::Exponent(exponent) => exponent.to_string(),
                Value::Flag(flag) => flag.to_string(),
                Value::Sizes(sizes) => format!("[{}]", sizes.iter().map(|b| spec_size(*b)).collect::<Vec<_>>().join(",")),
                Value::Devices(devices) => format!("[{}]", devices.iter().map(i32::to_string).collect::<Vec<_>>().join(",")),
                Value::HandleTypes(bits) => {
                    let names = HANDLE_TYPES.iter().filter(|(_, bit)| bits & bit != 0).map(|(name, _)| *name);
                    format!("[{}]", names.collect::<Vec<_>>().join(","))
                }
                Value::Path(path) => path.clone().unwrap_or_default(),
            };
            format!("{}={text}", key.name)
        });
        let params = params.collect::<Vec<_>>().join(",");
        match params.is_empty() {
            true => self.name().to_string(),
            false => format!("{}:{params}", self.name()),
        }
    }

    /// The layer `piece` names (`name` or `name:key=value,...`).
    fn parse(source: &Source, piece: Piece) -> Result<Layer> {
        let (name, params) = match piece.split_once(source, ':')? {
            Some((name, params)) => (name.trim(), Some(params.trim())),
            None => (piece, None),
        };
        if name.text.is_empty() {
            return Err(source.error(name, "an empty layer name: expected a layer such as pool or statistics"));
        }
        let lower = name.text.to_ascii_lowercase();
        let Some(kind) = Kind::named(&lower).filter(|kind| kind.build.is_some()) else {
            return Err(source.error(name, &format!("unknown layer {:?}: {}", name.text, known_layers())));
        };
        let keys: Vec<&str> = kind.keys.iter().map(|key| key.name).collect();
        let p = Params::parse(source, &lower, &keys, params)?;
        let mut values = Vec::new();
        for key in kind.keys {
            let value = match (p.value(key.name), &key.default) {
                (Some(value), _) => p.read(key.name, key.ty, value)?,
                (None, Some(default)) => default.clone(),
                (None, None) => return Err(source.error(name, &format!("{lower} needs {}=...", key.name))),
            };
            values.push((key.name, value));
        }
        let layer = Layer { params: kind.params(values)? };
        if let Err(refusal) = layer.params.check() {
            let at = refusal.at.iter().find_map(|key| p.piece(key)).unwrap_or(name);
            return Err(source.error(at, &refusal.message));
        }
        Ok(layer)
    }

    fn build(&self, upstream: Option<Arc<dyn MemoryResource>>, device: i32, reported: bool) -> Result<Arc<dyn MemoryResource>> {
        // A path in a spec is per device: one spec configures every device's stack.
        let mut params = self.params.clone();
        for (key, value) in self.params.iter() {
            if let Value::Path(Some(path)) = value {
                params.set(key.name, Value::Path(Some(log_path(path, device))))?;
            }
        }
        params.build(&Place { upstream, device, leaks_reported: reported })
    }
}

/// The layer names a spec takes, for messages.
fn known_layers() -> String {
    let names = |adaptors: bool| {
        let named = KINDS.iter().filter(|kind| kind.build.is_some() && (kind.role == Role::Adaptor) == adaptors);
        named.map(|kind| kind.name).collect::<Vec<_>>().join(", ")
    };
    format!("expected a resource ({}) or an adaptor ({})", names(false), names(true))
}

/// The keys of the `key:value` shorthand.
const SHORTHAND_KEYS: [&str; 10] = [
    "resource",
    "backend",
    "initial_pool_size",
    "maximum_pool_size",
    "release_threshold",
    "page_size",
    "log",
    "stats",
    "report",
    "async_free",
];

/// What a spec says besides its layers, by keywords before them (`report/async_free/pool`):
/// how the default stacks it configures are used.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Options {
    /// Each device's figures and unfreed allocations printed at exit.
    pub report: bool,
    /// `rmmCudaFree` (and so `cudaFree`/`cuMemFree` under the preload library) does not wait
    /// for the device: the memory waits instead, until the device has done everything it had
    /// been given before the free.
    pub async_free: bool,
    /// With `async_free`: how many bytes of frees may wait for one device before a free waits
    /// for the oldest of them (`async_free:pending=...`).
    pub pending: PendingBound,
    /// Every stream the program hands rmm-rs is a default stream or one rmm-rs made or was
    /// told of: any other handle is refused, never asked about (`platform::streams`).
    pub registered_streams: bool,
}

impl Options {
    /// The keywords, in the order the canonical form gives them.
    const KEYWORDS: [&'static str; 3] = ["report", "async_free", "registered_streams"];

    /// Whether `text` is keywords only (`report`, `report/async_free`,
    /// `async_free:pending=1GiB`): options without a stack. `report:1` and `async_free:1` are
    /// the `key:value` form.
    pub(crate) fn keywords_only(text: &str) -> bool {
        let separator = if text.contains('+') { '+' } else { '/' };
        text.split(separator).all(|piece| {
            let piece = piece.trim().to_ascii_lowercase();
            match piece.split_once(':') {
                None => Options::KEYWORDS.contains(&piece.as_str()),
                Some((name, parameters)) => name.trim() == "async_free" && parameters.contains('='),
            }
        })
    }

    fn flag(&mut self, keyword: &str) -> Option<&mut bool> {
        match keyword {
            "report" => Some(&mut self.report),
            "async_free" => Some(&mut self.async_free),
            "registered_streams" => Some(&mut self.registered_streams),
            _ => None,
        }
    }

    /// The keywords as the canonical form gives them: a bound other than the default is
    /// spelled out, the default is not (it follows the library's default when that changes).
    fn keywords(&self) -> Vec<String> {
        let mut keywords = Vec::new();
        if self.report {
            keywords.push("report".to_string());
        }
        if self.async_free {
            keywords.push(match self.pending {
                PendingBound::Default => "async_free".to_string(),
                bound => format!("async_free:pending={bound}"),
            });
        }
        if self.registered_streams {
            keywords.push("registered_streams".to_string());
        }
        keywords
    }
}

/// `async_free`'s bound: how many bytes of frees may wait for one device (frees whose memory
/// goes back to its resource once the device has done the work given before them) before a
/// free waits for the oldest of them. Frees waiting are memory nobody can use, and the pool
/// grows by them; waiting for the oldest costs the host the time the device needs to reach
/// them, which the bound keeps to the work that many freed bytes stand for.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub enum PendingBound {
    /// `async_free` alone: `DEFAULT_PENDING_PERCENT` of the device's memory, and at least
    /// `DEFAULT_PENDING_FLOOR` (at most the whole device).
    #[default]
    Default,
    /// `pending=SIZE`: bytes, above 0 and at most the device's memory.
    Bytes(usize),
    /// `pending=P%`: hundredths of a percent of the device's memory, 1 (0.01%) to 10000.
    Hundredths(u32),
}

/// The default bound's share of the device's memory, in hundredths of a percent (2%): an
/// 80 GiB H100 lets 1.6 GiB of frees wait, a 141 GiB H200 2.8 GiB. A starting point, to be
/// measured with `scripts/gpu-preload-bench.sh` (docs/src/preload.md): the frees a host runs
/// ahead by are the memory its queued kernels free, and a bound well above what one kernel
/// frees makes a free wait only for work queued long before it.
pub(crate) const DEFAULT_PENDING_PERCENT: u32 = 200;
/// The least the default bound allows: on a small device, room for a batch of frees of the
/// sizes a training step frees (tens of MiB each) before any free waits.
pub(crate) const DEFAULT_PENDING_FLOOR: usize = 256 << 20;

impl PendingBound {
    /// The bytes it lets wait on `device`, whose memory is `total` bytes; a bound the device
    /// cannot hold (more than its memory, or a share that comes to 0 bytes) is an
    /// InvalidArgument that says so.
    pub fn bytes_of(self, device: i32, total: usize) -> Result<usize> {
        let share = |hundredths: u32| usize::try_from(total as u128 * u128::from(hundredths) / 10_000).unwrap_or(usize::MAX);
        match self {
            PendingBound::Default => Ok(share(DEFAULT_PENDING_PERCENT).max(DEFAULT_PENDING_FLOOR).min(total)),
            PendingBound::Bytes(bytes) if bytes > total => Err(Error::invalid(format!(
                "async_free:pending={self} is more than device {device}'s memory, {}: give a size up to it, or a \
                 percentage of it",
                units::exact(total)
            ))),
            PendingBound::Bytes(bytes) => Ok(bytes),
            PendingBound::Hundredths(hundredths) => match share(hundredths) {
                0 => Err(Error::invalid(format!(
                    "async_free:pending={self} of device {device}'s memory, {}, is 0 bytes: every free would wait",
                    units::exact(total)
                ))),
                bytes => Ok(bytes),
            },
        }
    }

    /// `pending=`'s `value`: a size or a percentage (up to two decimals) of the device's
    /// memory, above 0 and at most 100%.
    fn parse(source: &Source, value: Piece) -> Result<PendingBound> {
        let garbage = || {
            source.error(
                value,
                &format!(
                    "async_free: pending={} is not a size (e.g. 2GiB) or a percentage of the device's memory (e.g. 2%, 0.5%)",
                    value.text
                ),
            )
        };
        let bound = match value.text.strip_suffix('%') {
            Some(percent) => {
                let (whole, fraction) = percent.split_once('.').unwrap_or((percent, ""));
                let digits = |text: &str| text.bytes().all(|b| b.is_ascii_digit());
                if whole.is_empty() || whole.len() > 3 || !digits(whole) || fraction.len() > 2 || !digits(fraction) {
                    return Err(garbage());
                }
                if percent.ends_with('.') {
                    return Err(garbage());
                }
                let whole: u32 = whole.parse().map_err(|_| garbage())?;
                let fraction: u32 = format!("{fraction:0<2}").parse().map_err(|_| garbage())?;
                PendingBound::Hundredths(whole * 100 + fraction)
            }
            None => PendingBound::Bytes(parse_size(value.text).map_err(|_| garbage())?),
        };
        match bound {
            PendingBound::Bytes(0) | PendingBound::Hundredths(0) => Err(source.error(
                value,
                &format!("async_free: pending={} would make every free wait: give a size or a percentage above 0", value.text),
            )),
            PendingBound::Hundredths(hundredths) if hundredths > 10_000 => {
                Err(source.error(value, &format!("async_free: pending={} is more than the device's memory (at most 100%)", value.text)))
            }
            bound => Ok(bound),
        }
    }
}

impl fmt::Display for PendingBound {
    /// As a spec gives it: `2GiB`, `2%`, `0.5%`; the default as `default`.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match *self {
            PendingBound::Default => f.write_str("default"),
            PendingBound::Bytes(bytes) => f.write_str(&spec_size(bytes)),
            PendingBound::Hundredths(hundredths) => match hundredths % 100 {
                0 => write!(f, "{}%", hundredths / 100),
                cents if cents % 10 == 0 => write!(f, "{}.{}%", hundredths / 100, cents / 10),
                cents => write!(f, "{}.{cents:02}%", hundredths / 100),
            },
        }
    }
}

/// devices other than 0 write to `<path>.<device>`, so that two devices never share a file.
fn log_path(path: &str, device: i32) -> String {
    match (path.contains("{device}"), device) {
        (true, _) => path.replace("{device}", &device.to_string()),
        (false, 0) => path.to_string(),
        (false, _) => format!("{path}.{device}"),
    }
}

// ---------------------------------------------------------------------------------------------
// Pieces of the text, with their place in it

/// The text being parsed, for messages that point into it.
struct Source<'a> {
    text: &'a str,
}

impl Source<'_> {
    /// A message naming `piece` by its column, with the spec and a caret line under it.
    fn error(&self, piece: Piece, what: &str) -> Error {
        let column = self.text[..piece.at].chars().count() + 1;
        let width = piece.text.chars().count().max(1);
        let quoted = match piece.text.is_empty() {
            true => String::new(),
            false => format!(" ({:?})", piece.text),
        };
        Error::invalid(format!(
            "resource spec, at column {column}{quoted}: {what}\n    {}\n    {}{}",
            self.text,
            " ".repeat(column - 1),
            "^".repeat(width)
        ))
    }
}

/// A slice of the spec and the byte offset where it starts.
#[derive(Debug, Clone, Copy)]
struct Piece<'a> {
    text: &'a str,
    at: usize,
}

impl<'a> Piece<'a> {
    fn trim(self) -> Piece<'a> {
        let start = self.text.len() - self.text.trim_start().len();
        Piece { text: self.text.trim(), at: self.at + start }
    }

    fn slice(self, from: usize, to: usize) -> Piece<'a> {
        Piece { text: &self.text[from..to], at: self.at + from }
    }

    /// The byte offsets of `separator` outside brackets; an unbalanced bracket is an error.
    fn separators(self, source: &Source, separator: char) -> Result<Vec<usize>> {
        let (mut found, mut open) = (Vec::new(), None);
        for (at, c) in self.text.char_indices() {
            match c {
                '[' if open.is_none() => open = Some(at),
                '[' => return Err(source.error(self.slice(at, at + 1), "a \"[\" inside a list: lists do not nest")),
                ']' if open.is_none() => return Err(source.error(self.slice(at, at + 1), "a \"]\" with no \"[\" before it")),
                ']' => open = None,
                c if c == separator && open.is_none() => found.push(at),
                _ => {}
            }
        }
        match open {
            Some(at) => Err(source.error(self.slice(at, at + 1), "a \"[\" with no \"]\" after it")),
            None => Ok(found),
        }
    }

    /// The trimmed pieces between `separator`s (outside brackets).
    fn split(self, source: &Source, separator: char) -> Result<Vec<Piece<'a>>> {
        let mut pieces = Vec::new();
        let mut start = 0;
        for at in self.separators(source, separator)? {
            pieces.push(self.slice(start, at).trim());
            start = at + separator.len_utf8();
        }
        pieces.push(self.slice(start, self.text.len()).trim());
        Ok(pieces)
    }

    /// The pieces before and after the first `separator` outside brackets.
    fn split_once(self, source: &Source, separator: char) -> Result<Option<(Piece<'a>, Piece<'a>)>> {
        Ok(self
            .separators(source, separator)?
            .first()
            .map(|&at| (self.slice(0, at), self.slice(at + separator.len_utf8(), self.text.len()))))
    }
}

/// The `key=value` parameters of one layer.
struct Params<'s, 'a> {
    source: &'s Source<'a>,
    layer: String,
    pairs: Vec<(Piece<'a>, Piece<'a>)>,
}

impl<'s, 'a> Params<'s, 'a> {
    fn parse(source: &'s Source<'a>, layer: &str, keys: &[&str], text: Option<Piece<'a>>) -> Result<Params<'s, 'a>> {
        let takes = || match keys {
            [] => format!("{layer} takes no parameters"),
            keys => format!("{layer} takes {}", keys.join(", ")),
        };
        let mut pairs: Vec<(Piece<'a>, Piece<'a>)> = Vec::new();
        if let Some(text) = text {
            for pair in text.split(source, ',')? {
                if pair.text.is_empty() {
                    return Err(source.error(pair, &format!("an empty parameter: expected key=value ({})", takes())));
                }
                let Some((key, value)) = pair.split_once(source, '=')? else {
                    return Err(source.error(pair, &format!("expected key=value ({})", takes())));
                };
                let (key, value) = (key.trim(), value.trim());
                if !keys.contains(&key.text) {
                    return Err(source.error(key, &format!("unknown key {:?} for {layer}: {}", key.text, takes())));
                }
                if let Some((first, _)) = pairs.iter().find(|(k, _)| k.text == key.text) {
                    let column = source.text[..first.at].chars().count() + 1;
                    return Err(source.error(key, &format!("{layer}: {} is given twice (first at column {column})", key.text)));
                }
                if value.text.is_empty() {
                    return Err(source.error(value, &format!("{layer}: {}= has no value", key.text)));
                }
                pairs.push((key, value));
            }
        }
        Ok(Params { source, layer: layer.to_string(), pairs })
    }

    fn value(&self, key: &str) -> Option<Piece<'a>> {
        self.pairs.iter().find(|(k, _)| k.text == key).map(|(_, v)| *v)
    }

    /// Where `key` was given.
    fn piece(&self, key: &str) -> Option<Piece<'a>> {
        self.pairs.iter().find(|(k, _)| k.text == key).map(|(k, v)| Piece { text: &self.source.text[k.at..v.at + v.text.len()], at: k.at })
    }

    /// `value`, given for `key`, read as a `ty`.
    fn read(&self, key: &str, ty: Type, value: Piece<'a>) -> Result<Value> {
        Ok(match ty {
            Type::Size => Value::Size(self.size(key, value)?),
            Type::Threshold => Value::Size(self.threshold(key, value)?),
            Type::Count => Value::Count(self.count(key, value)?),
            Type::Exponent => Value::Exponent(self.exponent(key, value)?),
            Type::Flag => Value::Flag(parse_flag(value.text).ok_or_else(|| self.bad(key, value, "true or false"))?),
            Type::Sizes => Value::Sizes(self.sizes(key, value)?),
            Type::Devices => Value::Devices(self.devices(key, value)?),
            Type::HandleTypes => Value::HandleTypes(self.handle_types(key, value)?),
            Type::Path => Value::Path(Some(value.text.to_string())),
        })
    }

    fn bad(&self, key: &str, value: Piece, expected: &str) -> Error {
        self.source.error(value, &format!("{}: {key}={} is not {expected}", self.layer, value.text))
    }

    fn size(&self, key: &str, value: Piece<'a>) -> Result<usize> {
        parse_size(value.text).map_err(|why| self.bad(key, value, &format!("a size: {why}")))
    }

    /// A size, or `unlimited` (keep everything).
    fn threshold(&self, key: &str, value: Piece<'a>) -> Result<usize> {
        match value.text.eq_ignore_ascii_case("unlimited") {
            true => Ok(UNLIMITED),
            false => parse_size(value.text).map_err(|why| self.bad(key, value, &format!("a size or unlimited: {why}"))),
        }
    }

    fn count(&self, key: &str, value: Piece<'a>) -> Result<usize> {
        value.text.parse().map_err(|_| self.bad(key, value, "a whole number"))
    }

    fn exponent(&self, key: &str, value: Piece<'a>) -> Result<i8> {
        value
            .text
            .parse::<i8>()
            .ok()
            .filter(|e| (0..=40).contains(e))
            .ok_or_else(|| self.bad(key, value, "a power-of-two exponent from 0 to 40"))
    }

    /// `[a,b,...]` or one item.
    fn list<T>(&self, key: &str, value: Piece<'a>, item: impl Fn(Piece<'a>) -> Result<T>) -> Result<Vec<T>> {
        let inner = match value.text.strip_prefix('[') {
            Some(rest) => match rest.strip_suffix(']') {
                Some(_) => value.slice(1, value.text.len() - 1),
                None => return Err(self.bad(key, value, "a list ending in \"]\"")),
            },
            None => value,
        };
        if inner.text.trim().is_empty() {
            return Ok(Vec::new());
        }
        inner.split(self.source, ',')?.into_iter().map(item).collect()
    }

    fn sizes(&self, key: &str, value: Piece<'a>) -> Result<Vec<usize>> {
        self.list(key, value, |item| self.size(key, item))
    }

    fn devices(&self, key: &str, value: Piece<'a>) -> Result<Vec<i32>> {
        self.list(key, value, |item| {
            item.text.parse::<i32>().ok().filter(|d| *d >= 0).ok_or_else(|| self.bad(key, item, "a device number"))
        })
    }

    fn handle_types(&self, key: &str, value: Piece<'a>) -> Result<u32> {
        let names = HANDLE_TYPES.iter().map(|(name, _)| *name).collect::<Vec<_>>().join(", ");
        let bits = self.list(key, value, |item| {
            HANDLE_TYPES
                .iter()
                .find(|(name, _)| item.text.eq_ignore_ascii_case(name))
                .map(|(_, bit)| *bit)
                .ok_or_else(|| self.bad(key, item, &format!("a handle type ({names})")))
        })?;
        Ok(bits.into_iter().fold(0, |all, bit| all | bit))
    }
}

fn parse_flag(text: &str) -> Option<bool> {
    match text.to_ascii_lowercase().as_str() {
        "1" | "true" | "yes" | "on" => Some(true),
        "0" | "false" | "no" | "off" => Some(false),
        _ => None,
    }
}

// ---------------------------------------------------------------------------------------------
// Specs

/// A parsed spec: the layers of a stack, outermost first, ending in a device resource, and
/// the `Options` its keywords set (default stacks only).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Spec {
    text: String,
    options: Options,
    layers: Vec<Layer>,
}

/// A built stack and the layers the exit report reads.
pub struct Built {
    /// The outermost layer: what callers allocate from.
    pub top: Arc<dyn MemoryResource>,
    /// The outermost layer that is not an adaptor: the resource whose footprint is reported.
    pub base: Arc<dyn MemoryResource>,
    /// The outermost statistics adaptor.
    pub statistics: Option<Arc<StatisticsAdaptor>>,
    /// The outermost tracking adaptor.
    pub tracking: Option<Arc<TrackingAdaptor>>,
}

impl Spec {
    /// Parses a spec in either form; errors are RMM_ERROR_INVALID_ARGUMENT and point at the
    /// offending text.
    pub fn parse(text: &str) -> Result<Spec> {
        let source = Source { text };
        let whole = Piece { text, at: 0 }.trim();
        if whole.text.is_empty() {
            return Err(source.error(whole, "an empty spec: expected a stack such as statistics/pool/cuda"));
        }
        let (options, layers) = match shorthand_key(&source, whole)? {
            true => parse_shorthand(&source, whole)?,
            false => parse_stack(&source, whole)?,
        };
        Ok(Spec { text: whole.text.to_string(), options, layers })
    }

    /// The spec as given.
    pub fn text(&self) -> &str {
        &self.text
    }

    /// Outermost first; the last is a device resource.
    pub fn layers(&self) -> &[Layer] {
        &self.layers
    }

    /// Whether the stack's figures and leaks are printed at exit (`report`).
    pub fn report(&self) -> bool {
        self.options.report
    }

    /// What the spec's keywords set.
    pub fn options(&self) -> Options {
        self.options
    }

    /// The stack with every parameter spelled out, e.g. `pool:initial=0,maximum=0/cuda`;
    /// it parses to this spec again.
    pub fn canonical(&self) -> String {
        // Only a path holds a "/".
        let holds_slash = self.layers.iter().any(|l| l.canonical().contains('/'));
        let separator = if holds_slash { "+" } else { "/" };
        let keywords = self.options.keywords().into_iter();
        keywords.chain(self.layers.iter().map(Layer::canonical)).collect::<Vec<_>>().join(separator)
    }

    /// Builds the stack on `device`, bottom layer first. A resource that refuses its
    /// parameters keeps its error kind; the message names the layer.
    pub fn build_on(&self, device: i32) -> Result<Arc<dyn MemoryResource>> {
        Ok(self.build_stack(device)?.top)
    }

    /// `build_on`, with the layers the exit report reads.
    pub fn build_stack(&self, device: i32) -> Result<Built> {
        crate::platform::backend()?.check_device(device)?;
        let mut built: Option<Built> = None;
        for layer in self.layers.iter().rev() {
            let upstream = built.as_ref().map(|b| b.top.clone());
            let resource = layer.build(upstream, device, self.options.report).map_err(|e| building(&self.text, layer, e))?;
            let any: Arc<dyn std::any::Any + Send + Sync> = resource.clone();
            let built =
                built.get_or_insert_with(|| Built { top: resource.clone(), base: resource.clone(), statistics: None, tracking: None });
            built.top = resource.clone();
            if !layer.is_adaptor() {
                built.base = resource;
            } else if let Ok(statistics) = any.clone().downcast::<StatisticsAdaptor>() {
                built.statistics = Some(statistics);
            } else if let Ok(tracking) = any.downcast::<TrackingAdaptor>() {
                built.tracking = Some(tracking);
            }
        }
        built.ok_or_else(|| Error::Internal("a spec has at least one layer".into()))
    }
}

/// `error` of building `layer`, its message naming the layer and the spec.
fn building(text: &str, layer: &Layer, error: Error) -> Error {
    let context = |message: String| format!("{text}: building {}: {message}", layer.name());
    match error.into_kind() {
        ErrorKind::InvalidArgument(m) => Error::InvalidArgument(context(m)),
        ErrorKind::NotSupported(m) => Error::NotSupported(context(m)),
        ErrorKind::Io(m) => Error::Io(context(m)),
        ErrorKind::OutOfMemory { requested, detail } => Error::out_of_memory(requested, context(detail)),
        other => other.into(),
    }
}

impl std::str::FromStr for Spec {
    type Err = Error;
    fn from_str(text: &str) -> Result<Spec> {
        Spec::parse(text)
    }
}

impl fmt::Display for Spec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.text)
    }
}

fn parse_stack(source: &Source, whole: Piece) -> Result<(Options, Vec<Layer>)> {
    let separator = if whole.text.contains('+') { '+' } else { '/' };
    let pieces = whole.split(source, separator)?;
    let mut options = Options::default();
    let mut layers: Vec<Layer> = Vec::new();
    for piece in pieces {
        let name = piece.text.split(':').next().unwrap_or_default().trim().to_ascii_lowercase();
        if let Some(flag) = options.flag(&name) {
            let parameters = piece.split_once(source, ':')?.map(|(_, parameters)| parameters.trim());
            if name == "report" && (!layers.is_empty() || *flag || parameters.is_some()) {
                return Err(
                    source.error(piece, "report takes no parameters and comes once, before the layers (report/async_free/statistics/pool)")
                );
            }
            if name == "registered_streams" && (!layers.is_empty() || *flag || parameters.is_some()) {
                return Err(source.error(
                    piece,
                    "registered_streams takes no parameters and comes once, before the layers (registered_streams/statistics/pool)",
                ));
            }
            if !layers.is_empty() || *flag {
                return Err(source.error(piece, "async_free comes once, before the layers (async_free:pending=2GiB/statistics/pool)"));
            }
            *flag = true;
            if name == "async_free" {
                let parameters = Params::parse(source, "async_free", &["pending"], parameters)?;
                if let Some(value) = parameters.value("pending") {
                    options.pending = PendingBound::parse(source, value)?;
                }
            }
            continue;
        }
        if piece.text.is_empty() {
            return Err(source.error(
                piece,
                &format!("an empty layer: expected a layer name between two \"{separator}\" (or no \"{separator}\" at the ends)"),
            ));
        }
        if let Some(device) = layers.last().filter(|layer| layer.is_device()) {
            return Err(source.error(
                piece,
                &format!("{} takes memory from the device itself, so it must be the last layer: nothing can come after it", device.name()),
            ));
        }
        layers.push(Layer::parse(source, piece)?);
    }
    if layers.is_empty() {
        return Err(source.error(whole, "no layer: expected a stack after the keywords, such as report/statistics/pool"));
    }
    if !layers.last().is_some_and(Layer::is_device) {
        layers.push(Layer::of(DEFAULT_STACK, [])?);
    }
    Ok((options, layers))
}

/// Whether `whole` is in the `key:value` shorthand: its first item is `key:value` with a
/// shorthand key (a stack's first layer is `name` or `name:key=value`).
fn shorthand_key(source: &Source, whole: Piece) -> Result<bool> {
    let first = whole.split(source, ',')?[0];
    Ok(match first.split_once(source, ':')? {
        Some((key, value)) => SHORTHAND_KEYS.contains(&key.trim().text) && !value.text.contains('='),
        None => false,
    })
}

/// The `RMM_ALLOC_CONF` shorthand, translated into layers as it was always documented:
/// `[logging/][statistics/][tracking/]resource`, where `resource` is pool (the default),
/// arena, binning (over a pool), cuda, cuda_async, managed or expandable, sized by
/// `initial_pool_size` and `maximum_pool_size`; `stats` defaults to 1; `report:1` adds
/// statistics and tracking. Later keys win.
fn parse_shorthand(source: &Source, whole: Piece) -> Result<(Options, Vec<Layer>)> {
    let mut resource = ("pool".to_string(), None);
    let (mut initial, mut maximum, mut release_threshold, mut page_size) = (0, 0, None, 0);
    let (mut log, mut stats, mut report, mut async_free) = (None, true, false, false);
    let mut maximum_at = None;
    for item in whole.split(source, ',')? {
        if item.text.is_empty() {
            return Err(source.error(item, "an empty item: expected key:value between two \",\" (or no \",\" at the ends)"));
        }
        let Some((key, value)) = item.split_once(source, ':')? else {
            return Err(source.error(item, &format!("expected key:value (keys: {})", SHORTHAND_KEYS.join(", "))));
        };
        let (key, value) = (key.trim(), value.trim());
        let size = || parse_size(value.text).map_err(|why| source.error(value, &format!("{}: not a size: {why}", key.text)));
        let flag = || parse_flag(value.text).ok_or_else(|| source.error(value, &format!("{}: expected 1 or 0", key.text)));
        match key.text {
            "resource" | "backend" => resource = (value.text.to_ascii_lowercase(), Some(value)),
            "initial_pool_size" => initial = size()?,
            "maximum_pool_size" => (maximum, maximum_at) = (size()?, Some(item)),
            "release_threshold" => release_threshold = Some(size()?),
            "page_size" => page_size = size()?,
            "log" => log = (!value.text.is_empty()).then(|| value.text.to_string()),
            "stats" => stats = flag()?,
            "report" => report = flag()?,
            "async_free" => async_free = flag()?,
            _ => {
                return Err(
                    source.error(key, &format!("unknown key {:?}: the key:value form takes {}", key.text, SHORTHAND_KEYS.join(", ")))
                )
            }
        }
    }
    if maximum != 0 && initial > maximum {
        let at = maximum_at.unwrap_or(whole);
        return Err(source.error(at, &format!("initial_pool_size {} exceeds maximum_pool_size {}", spec_size(initial), spec_size(maximum))));
    }
    let pool = || Layer::of("pool", [("initial", Value::Size(initial)), ("maximum", Value::Size(maximum))]);
    let mut layers = Vec::new();
    if let Some(path) = log {
        layers.push(Layer::of("logging", [("path", Value::Path(Some(path)))])?);
    }
    if stats || report {
        layers.push(Layer::of("statistics", [])?);
    }
    if report {
        layers.push(Layer::of("tracking", [])?);
    }
    let cuda = || Layer::of("cuda", []);
    let base = match resource.0.as_str() {
        "pool" => vec![pool()?, cuda()?],
        "arena" => vec![Layer::of("arena", [("size", Value::Size(initial))])?, cuda()?],
        "binning" => vec![Layer::of("binning", [])?, pool()?, cuda()?],
        "cuda" => vec![cuda()?],
        "cuda_async" | "async" => {
            let threshold = release_threshold.unwrap_or(if maximum == 0 { UNLIMITED } else { maximum });
            vec![Layer::of("cuda_async", [("initial", Value::Size(initial)), ("release_threshold", Value::Size(threshold))])?]
        }
        "managed" => vec![Layer::of("managed", [])?],
        "expandable" => vec![Layer::of(
            "expandable",
            [
                ("initial", Value::Size(initial)),
                ("maximum", Value::Size(maximum)),
                ("release_threshold", Value::Size(release_threshold.unwrap_or(UNLIMITED))),
                ("page_size", Value::Size(page_size)),
            ],
        )?],
        other => {
            let at = resource.1.unwrap_or(whole);
            return Err(
                source.error(at, &format!("resource:{other}: expected pool, arena, binning, cuda, cuda_async, managed or expandable"))
            );
        }
    };
    layers.extend(base);
    Ok((Options { report, async_free, pending: PendingBound::Default, registered_streams: false }, layers))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn spec(text: &str) -> Spec {
        Spec::parse(text).unwrap_or_else(|e| panic!("{text}: {e}"))
    }

    fn error(text: &str) -> String {
        match Spec::parse(text) {
            Ok(spec) => panic!("{text:?} parsed to {spec:?}"),
            Err(e) => {
                assert!(matches!(e.kind(), ErrorKind::InvalidArgument(_)), "{text:?}: {e}");
                e.to_string()
            }
        }
    }

    /// One spec of every layer, with every parameter away from its default.
    const EVERY_LAYER: [&str; 19] = [
        "statistics/cuda",
        "tracking:stacks=true/cuda",
        "limiting:limit=3GiB/cuda",
        "aligned:alignment=4KiB,threshold=1MiB/cuda",
        "logging:path=/tmp/rmm-{device}.csv+cuda",
        "prefetch/managed",
        "pool:initial=1GiB,maximum=8GiB/cuda",
        "binning:min=10,max=12,bins=[1MiB,4MiB]/cuda",
        "arena:size=256MiB/cuda",
        "fixed_size:block=2MiB,prealloc=16/cuda",
        "cuda",
        "managed",
        "pinned_host",
        "cuda_async:initial=1GiB,release_threshold=2GiB,handle_types=[posix_file_descriptor,fabric],hw_decompress=true",
        "cuda_async_managed",
        "cuda_async_pinned_host:initial=4MiB,release_threshold=8MiB",
        "system",
        "sam_headroom:headroom=1GiB",
        "expandable:initial=2MiB,maximum=1TiB,release_threshold=1GiB,page_size=20MiB,peers=[1,2]",
    ];

    #[test]
    fn every_layer_round_trips_through_its_canonical_form() {
        let mut names = Vec::new();
        for text in EVERY_LAYER {
            let parsed = spec(text);
            assert_eq!(parsed.canonical(), text, "{text} is canonical already");
            assert_eq!(spec(&parsed.canonical()), Spec { text: text.to_string(), ..parsed.clone() });
            names.push(parsed.layers()[0].name());
        }
        let mut all: Vec<&str> = KINDS.iter().filter(|kind| kind.build.is_some()).map(|kind| kind.name).collect();
        names.sort();
        all.sort();
        assert_eq!(names, all, "every layer is covered");
    }

    #[test]
    fn omitted_parameters_take_the_c_apis_defaults() {
        let cases = [
            ("pool", "pool:initial=0,maximum=0/cuda"),
            ("binning", "binning:min=8,max=20/cuda"),
            ("arena", "arena:size=0/cuda"),
            ("fixed_size", "fixed_size:block=1MiB,prealloc=128/cuda"),
            ("aligned:alignment=512", "aligned:alignment=512,threshold=64KiB/cuda"),
            ("tracking", "tracking:stacks=false/cuda"),
            ("logging", "logging/cuda"),
            ("cuda_async", "cuda_async:initial=0,release_threshold=unlimited,hw_decompress=false"),
            ("expandable", "expandable:initial=0,maximum=0,release_threshold=unlimited,page_size=0"),
            ("statistics", "statistics/cuda"),
            (" Statistics / POOL:initial=4096 ", "statistics/pool:initial=4KiB,maximum=0/cuda"),
            ("statistics+limiting:limit=2GiB+pool", "statistics/limiting:limit=2GiB/pool:initial=0,maximum=0/cuda"),
            ("report/statistics/pool", "report/statistics/pool:initial=0,maximum=0/cuda"),
            // Sizes: SI units are powers of 1000, binary ones of 1024 (crate::units).
            ("pool:initial=1GB,maximum=1.5GiB", "pool:initial=1000000000,maximum=1536MiB/cuda"),
            ("limiting:limit=2 kb", "limiting:limit=2000/cuda"),
        ];
        for (text, canonical) in cases {
            assert_eq!(spec(text).canonical(), canonical, "{text}");
        }
        assert_eq!(spec(DEFAULT_STACK).layers(), &[Layer::of("cuda", []).unwrap()]);
        assert_eq!(spec("expandable:peers=[]").layers(), spec("expandable").layers());
        let pool = Layer::of("pool", [("initial", Value::Size(4096))]).unwrap();
        assert_eq!(spec("pool:initial=4096").layers(), &[pool, Layer::of("cuda", []).unwrap()]);
        assert_eq!(spec(" arena ").text(), "arena");
    }

    #[test]
    fn the_shorthand_translates_to_the_stack_it_always_meant() {
        let cases = [
            ("resource:pool,initial_pool_size:4GiB,maximum_pool_size:60GiB", "statistics/pool:initial=4GiB,maximum=60GiB/cuda"),
            (
                "resource:pool, initial_pool_size:4GiB,maximum_pool_size:60GiB,log:/tmp/rmm.csv,stats:1,report:1",
                "report+logging:path=/tmp/rmm.csv+statistics+tracking:stacks=false+pool:initial=4GiB,maximum=60GiB+cuda",
            ),
            ("report:1", "report/statistics/tracking:stacks=false/pool:initial=0,maximum=0/cuda"),
            ("async_free/report/pool", "report/async_free/pool:initial=0,maximum=0/cuda"),
            ("async_free:1,report:1", "report/async_free/statistics/tracking:stacks=false/pool:initial=0,maximum=0/cuda"),
            ("stats:0", "pool:initial=0,maximum=0/cuda"),
            ("resource:cuda,stats:0", "cuda"),
            ("resource:arena,initial_pool_size:1GiB", "statistics/arena:size=1GiB/cuda"),
            ("resource:binning,stats:off", "binning:min=8,max=20/pool:initial=0,maximum=0/cuda"),
            ("backend:async,stats:0", "cuda_async:initial=0,release_threshold=unlimited,hw_decompress=false"),
            ("resource:cuda_async,maximum_pool_size:2GiB,stats:0", "cuda_async:initial=0,release_threshold=2GiB,hw_decompress=false"),
            ("resource:managed,stats:0", "managed"),
            (
                "resource:expandable,release_threshold:1GiB,page_size:20MiB,stats:0",
                "expandable:initial=0,maximum=0,release_threshold=1GiB,page_size=20MiB",
            ),
            ("resource:arena,resource:pool,stats:0", "pool:initial=0,maximum=0/cuda"),
            ("resource:pool,initial_pool_size:2GB,stats:0", "pool:initial=1953125KiB,maximum=0/cuda"),
        ];
        for (text, canonical) in cases {
            let parsed = spec(text);
            assert_eq!(parsed.canonical(), canonical, "{text}");
            assert_eq!(spec(canonical).layers(), parsed.layers(), "{canonical}");
            assert_eq!(spec(canonical).options(), parsed.options(), "{canonical}");
        }
    }

    #[test]
    fn a_bad_spec_is_pointed_at() {
        // (spec, the token quoted, its column, what the message says)
        let cases = [
            ("", "", 1, "an empty spec"),
            ("slab", "slab", 1, "unknown layer \"slab\": expected a resource (pool, binning, arena, fixed_size, cuda, managed, pinned_host, cuda_async, cuda_async_managed, cuda_async_pinned_host, system, sam_headroom, expandable) or an adaptor (statistics, "),
            ("statistics/pool:inital=1GiB", "inital", 17, "unknown key \"inital\" for pool: pool takes initial, maximum"),
            ("pool:initial=lots", "lots", 14, "pool: initial=lots is not a size"),
            ("pool:initial=1GiB,initial=2GiB", "initial", 19, "initial is given twice (first at column 6)"),
            ("cuda/pool", "pool", 6, "cuda takes memory from the device itself, so it must be the last layer"),
            ("statistics/managed/statistics", "statistics", 20, "managed takes memory from the device itself"),
            ("pool//cuda", "", 6, "an empty layer"),
            ("pool/", "", 6, "an empty layer"),
            ("/pool", "", 1, "an empty layer"),
            ("pool:", "", 6, "an empty parameter"),
            ("pool:initial=1GiB,", "", 19, "an empty parameter"),
            ("pool:initial", "initial", 6, "expected key=value (pool takes initial, maximum)"),
            ("pool:initial=", "", 14, "initial= has no value"),
            (":initial=1", "", 1, "an empty layer name"),
            ("cuda:initial=1", "initial", 6, "cuda takes no parameters"),
            ("binning:min=20,max=8", "max=8", 16, "min=20 is above max=8"),
            ("binning:min=41", "41", 13, "a power-of-two exponent from 0 to 40"),
            ("binning:bins=[1MiB,big]", "big", 20, "bins=big is not a size"),
            ("binning:bins=[1MiB", "[", 14, "a \"[\" with no \"]\" after it"),
            ("limiting", "limiting", 1, "limiting needs limit=..."),
            ("aligned:threshold=1MiB", "aligned", 1, "aligned needs alignment=..."),
            ("tracking:stacks=maybe", "maybe", 17, "not true or false"),
            ("fixed_size:block=0", "block=0", 12, "expected a block size above 0"),
            ("fixed_size:prealloc=-1", "-1", 21, "not a whole number"),
            ("pool:initial=2GiB,maximum=1GiB", "maximum=1GiB", 19, "initial=2GiB exceeds maximum=1GiB"),
            ("cuda_async:handle_types=[fabric,nfs]", "nfs", 33, "a handle type (posix_file_descriptor, win32, win32_kmt, fabric)"),
            ("cuda_async:release_threshold=some", "some", 30, "release_threshold=some is not a size or unlimited: expected a number"),
            ("pool:initial=4G", "4G", 14, "pool: initial=4G is not a size: 4G is ambiguous: write 4GiB (4294967296 bytes) or 4GB (4000000000 bytes)"),
            ("pool:initial=3 parsecs", "3 parsecs", 14, "initial=3 parsecs is not a size: \"parsecs\" is not a unit (B; kB, MB"),
            ("limiting:limit=17000PiB", "17000PiB", 16, "limit=17000PiB is not a size: more than SIZE_MAX"),
            ("expandable:peers=[0,x]", "x", 21, "a device number"),
            ("statistics/report/pool", "report", 12, "report takes no parameters and comes once, before the layers"),
            ("report:x=1/pool", "report:x=1", 1, "report takes no parameters"),
            ("async_free/async_free/pool", "async_free", 12, "async_free comes once, before the layers"),
            ("pool/async_free", "async_free", 6, "async_free comes once, before the layers"),
            ("pool/async_free:pending=1GiB", "async_free:pending=1GiB", 6, "async_free comes once, before the layers"),
            ("async_free", "async_free", 1, "no layer: expected a stack after the keywords"),
            // async_free's bound.
            ("async_free:pending=0/pool", "0", 20, "pending=0 would make every free wait"),
            ("async_free:pending=0%/pool", "0%", 20, "pending=0% would make every free wait"),
            ("async_free:pending=0.00%/pool", "0.00%", 20, "would make every free wait"),
            ("async_free:pending=lots/pool", "lots", 20, "pending=lots is not a size (e.g. 2GiB) or a percentage"),
            ("async_free:pending=2.555%/pool", "2.555%", 20, "is not a size (e.g. 2GiB) or a percentage"),
            ("async_free:pending=-1%/pool", "-1%", 20, "is not a size (e.g. 2GiB) or a percentage"),
            ("async_free:pending=%/pool", "%", 20, "is not a size"),
            ("async_free:pending=2.%/pool", "2.%", 20, "is not a size"),
            ("async_free:pending=150%/pool", "150%", 20, "pending=150% is more than the device's memory (at most 100%)"),
            ("async_free:pending=100.01%/pool", "100.01%", 20, "more than the device's memory"),
            ("async_free:bound=1GiB/pool", "bound", 12, "unknown key \"bound\" for async_free: async_free takes pending"),
            ("async_free:pending=1GiB,pending=2GiB/pool", "pending", 25, "async_free: pending is given twice (first at column 12)"),
            ("async_free:pending=1GiB,/pool", "", 25, "an empty parameter: expected key=value (async_free takes pending)"),
            // A value without "=" is the key:value form's.
            ("async_free:/pool", "/pool", 12, "async_free: expected 1 or 0"),
            ("async_free:pending=/pool", "", 20, "async_free: pending= has no value"),
            // The shorthand.
            ("resource:bogus", "bogus", 10, "resource:bogus: expected pool, arena, binning"),
            ("initial_pool_size:lots", "lots", 19, "initial_pool_size: not a size"),
            ("initial_pool_size:2G", "2G", 19, "initial_pool_size: not a size: 2G is ambiguous: write 2GiB"),
            ("stats:maybe", "maybe", 7, "stats: expected 1 or 0"),
            ("resource:pool,colour:blue", "colour", 15, "unknown key \"colour\": the key:value form takes resource, backend"),
            ("resource:pool,,stats:1", "", 15, "an empty item"),
            ("resource:pool,stats", "stats", 15, "expected key:value"),
            ("initial_pool_size:2GiB,maximum_pool_size:1GiB", "maximum_pool_size:1GiB", 24, "initial_pool_size 2GiB exceeds maximum_pool_size 1GiB"),
            ("colour:blue", "colour", 1, "unknown layer \"colour\""),
        ];
        for (text, token, column, says) in cases {
            let message = error(text);
            let quoted = if token.is_empty() { String::new() } else { format!(" ({token:?})") };
            assert!(
                message.contains(&format!("at column {column}{quoted}: ")),
                "{text:?}: {message:?} does not point at {token:?} (column {column})"
            );
            assert!(message.contains(says), "{text:?}: {message:?} does not say {says:?}");
            let caret = message.lines().last().unwrap_or_default();
            assert_eq!(caret.find('^'), Some(4 + column - 1), "{text:?}: the caret line {caret:?} is under column {column}");
            assert_eq!(caret.trim().len(), token.chars().count().max(1), "{text:?}: {caret:?} underlines {token:?}");
        }
    }

    #[test]
    fn async_free_bounds_round_trip_through_the_canonical_form() {
        let cases = [
            ("async_free/pool", "async_free/pool:initial=0,maximum=0/cuda", PendingBound::Default),
            ("async_free:pending=1GiB/pool", "async_free:pending=1GiB/pool:initial=0,maximum=0/cuda", PendingBound::Bytes(1 << 30)),
            ("ASYNC_FREE: pending = 1024MiB /pool", "async_free:pending=1GiB/pool:initial=0,maximum=0/cuda", PendingBound::Bytes(1 << 30)),
            ("async_free:pending=1000/cuda", "async_free:pending=1000/cuda", PendingBound::Bytes(1000)),
            ("async_free:pending=2%/cuda", "async_free:pending=2%/cuda", PendingBound::Hundredths(200)),
            ("async_free:pending=2.50%/cuda", "async_free:pending=2.5%/cuda", PendingBound::Hundredths(250)),
            ("async_free:pending=0.05%/cuda", "async_free:pending=0.05%/cuda", PendingBound::Hundredths(5)),
            ("async_free:pending=100%/cuda", "async_free:pending=100%/cuda", PendingBound::Hundredths(10_000)),
            (
                "report/async_free:pending=512MiB/statistics/pool",
                "report/async_free:pending=512MiB/statistics/pool:initial=0,maximum=0/cuda",
                PendingBound::Bytes(512 << 20),
            ),
            (
                "async_free:pending=5%+logging:path=/tmp/a.csv+pool",
                "async_free:pending=5%+logging:path=/tmp/a.csv+pool:initial=0,maximum=0+cuda",
                PendingBound::Hundredths(500),
            ),
            // The key:value form takes the default bound.
            ("async_free:1,stats:0", "async_free/pool:initial=0,maximum=0/cuda", PendingBound::Default),
        ];
        for (text, canonical, bound) in cases {
            let parsed = spec(text);
            assert_eq!(parsed.canonical(), canonical, "{text}");
            let expected = Options { report: text.starts_with("report"), async_free: true, pending: bound, registered_streams: false };
            assert_eq!(parsed.options(), expected, "{text}");
            assert_eq!(spec(canonical).options(), parsed.options(), "{canonical}");
            assert_eq!(spec(canonical).layers(), parsed.layers(), "{canonical}");
        }
        assert_eq!(spec("pool").options().pending, PendingBound::Default, "no async_free, no bound");
    }

    #[test]
    fn a_bound_comes_to_bytes_of_the_device_or_says_why_it_cannot() {
        const GIB: usize = 1 << 30;
        let bytes = |bound: PendingBound, total: usize| bound.bytes_of(3, total);
        assert_eq!(bytes(PendingBound::Bytes(GIB), 80 * GIB), Ok(GIB));
        assert_eq!(bytes(PendingBound::Bytes(80 * GIB), 80 * GIB), Ok(80 * GIB), "the whole device");
        assert_eq!(bytes(PendingBound::Hundredths(250), 80 * GIB), Ok(2 * GIB));
        assert_eq!(bytes(PendingBound::Hundredths(10_000), 80 * GIB), Ok(80 * GIB));
        // The default: its share of a large device, its floor on a small one, never more than all.
        assert_eq!(DEFAULT_PENDING_PERCENT, 200, "docs/src/configuration.md and preload.md give this default");
        assert_eq!(DEFAULT_PENDING_FLOOR, 256 << 20, "docs/src/configuration.md and preload.md give this floor");
        assert_eq!(bytes(PendingBound::Default, 100 * GIB), Ok(2 * GIB));
        assert_eq!(bytes(PendingBound::Default, 4 * GIB), Ok(DEFAULT_PENDING_FLOOR));
        assert_eq!(bytes(PendingBound::Default, 64 << 20), Ok(64 << 20));
        let refused = |bound: PendingBound, total: usize| match bytes(bound, total) {
            Err(e) if matches!(e.kind(), ErrorKind::InvalidArgument(_)) => e.to_string(),
            other => panic!("{bound:?} of {total} bytes: {other:?}"),
        };
        let message = refused(PendingBound::Bytes(GIB + 1), GIB);
        assert!(message.contains("async_free:pending=1073741825 is more than device 3's memory, 1.00 GiB"), "{message}");
        let message = refused(PendingBound::Hundredths(1), 4096);
        assert!(message.contains("async_free:pending=0.01% of device 3's memory, 4.00 KiB (4096 bytes), is 0 bytes"), "{message}");
    }

    #[test]
    fn an_unknown_layer_is_answered_with_every_layer_a_spec_takes() {
        let message = error("slab");
        let listed = |after: &str| -> Vec<String> {
            let start = message.find(after).unwrap_or_else(|| panic!("{message:?} has no {after:?}")) + after.len();
            let length = message[start..].find(')').unwrap_or_default();
            message[start..start + length].split(", ").map(str::to_string).collect()
        };
        let registered = |adaptors: bool| -> Vec<String> {
            let buildable = KINDS.iter().filter(|kind| kind.build.is_some() && (kind.role == Role::Adaptor) == adaptors);
            buildable.map(|kind| kind.name.to_string()).collect()
        };
        assert_eq!(listed("expected a resource ("), registered(false));
        assert_eq!(listed("or an adaptor ("), registered(true));
    }

    #[test]
    fn log_paths_are_per_device() {
        assert_eq!(log_path("/tmp/a.csv", 0), "/tmp/a.csv");
        assert_eq!(log_path("/tmp/a.csv", 3), "/tmp/a.csv.3");
        assert_eq!(log_path("/tmp/a-{device}.csv", 0), "/tmp/a-0.csv");
        assert_eq!(log_path("/tmp/a-{device}.csv", 2), "/tmp/a-2.csv");
    }

    #[test]
    fn sizes_print_in_the_largest_unit_that_divides_them() {
        assert_eq!(spec_size(0), "0");
        assert_eq!(spec_size(1000), "1000");
        assert_eq!(spec_size(3 << 30), "3GiB");
        assert_eq!(spec_size((1 << 30) + (1 << 20)), "1025MiB");
        assert_eq!(spec_size(usize::MAX), "unlimited");
    }
}
