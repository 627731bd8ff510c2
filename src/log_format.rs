//! The RMM log format: the CSV of RAPIDS RMM's `logging_resource_adaptor`, which our logging
//! adaptor writes (`resources::adaptors`) and `rmm-replay` and the timeline report read
//! (`replay`), so RAPIDS tools read our logs and we read theirs:
//!
//! ```text
//! Thread,Time,Action,Pointer,Size,Stream
//! 4031547,14:03:07.123456,allocate,0x7f3a40000000,1024,0
//! 4031547,14:03:07.123470,free,0x7f3a40000000,1024,0
//! 4031548,14:03:07.123480,allocate failure,(nil),99999999999,0x55d0c2a3b4c0
//! ```
//!
//! Thread is the OS thread id, Time the local time of day with microseconds ([`TimeOfDay`]),
//! Action one of `allocate`, `allocate failure`, `free` ([`Action`]); a failed allocation's
//! pointer is `(nil)`; the stream is the handle in hex (`0` for the default stream).
//!
//! [`Lines`] writes rows exactly as RMM does; [`parse_log`] reads a log into [`Event`]s, and
//! accepts what other RMM versions write too (columns found by name, in any order).
//!
//! A leaf, like `units`: it uses nothing else of the crate, so the logging adaptor at the
//! resources layer and the replay above it share it without an import reaching up.

use std::fmt;
use std::io::Write;

/// The columns RMM writes, in the order it writes them: the log's first line.
pub const COLUMNS: &str = "Thread,Time,Action,Pointer,Size,Stream";

/// What a log line records.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[repr(u8)]
pub enum Action {
    /// An allocation that succeeded.
    Allocate,
    /// An allocation the logged program saw fail (its pointer is `(nil)`).
    AllocateFailure,
    /// A free.
    Free,
}

impl Action {
    /// The word the log uses.
    pub const fn as_str(self) -> &'static str {
        match self {
            Action::Allocate => "allocate",
            Action::AllocateFailure => "allocate failure",
            Action::Free => "free",
        }
    }

    /// The word, or a variant other RMM versions write (`deallocate`, `allocate_failure`, any
    /// case, any spacing).
    fn parse(text: &str) -> Result<Action, String> {
        let words: Vec<String> = text.split_whitespace().map(str::to_ascii_lowercase).collect();
        match words.iter().map(String::as_str).collect::<Vec<_>>().as_slice() {
            ["allocate"] => Ok(Action::Allocate),
            ["free"] | ["deallocate"] => Ok(Action::Free),
            ["allocate", "failure"] | ["allocate_failure"] => Ok(Action::AllocateFailure),
            _ => Err(format!("unknown action {:?} (expected allocate, free or allocate failure)", text.trim())),
        }
    }
}

impl fmt::Display for Action {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A Time field: the local time of day, to the microsecond, as RMM writes it
/// (`HH:MM:SS.ffffff`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub struct TimeOfDay {
    micros: u64,
}

const MICROS_PER_SECOND: u64 = 1_000_000;
const SECONDS_PER_DAY: i64 = 86_400;

impl TimeOfDay {
    /// The time of day, `utc_offset` seconds east of UTC, at `unix_ns` nanoseconds since the
    /// Unix epoch (truncated to the microsecond, as RMM's clock shows it).
    pub fn from_unix_ns(unix_ns: u64, utc_offset: i64) -> TimeOfDay {
        let second = (unix_ns / 1_000_000_000) as i64 + utc_offset;
        let second_of_day = second.rem_euclid(SECONDS_PER_DAY) as u64;
        TimeOfDay { micros: second_of_day * MICROS_PER_SECOND + unix_ns % 1_000_000_000 / 1000 }
    }

    /// `HH:MM:SS` or `HH:MM:SS.fraction` (a leap second's `60` included; digits past the
    /// microsecond are dropped); None for anything else.
    pub fn parse(text: &str) -> Option<TimeOfDay> {
        let mut parts = text.splitn(3, ':');
        let (hours, minutes, seconds) = (parts.next()?, parts.next()?, parts.next()?);
        let (hours, minutes): (u64, u64) = (hours.parse().ok()?, minutes.parse().ok()?);
        let (whole, fraction) = seconds.split_once('.').unwrap_or((seconds, ""));
        let whole: u64 = whole.parse().ok()?;
        if hours >= 24 || minutes >= 60 || whole > 60 || !fraction.bytes().all(|b| b.is_ascii_digit()) {
            return None;
        }
        let micros = fraction.bytes().chain(std::iter::repeat(b'0')).take(6).fold(0, |micros, digit| micros * 10 + u64::from(digit - b'0'));
        Some(TimeOfDay { micros: ((hours * 60 + minutes) * 60 + whole) * MICROS_PER_SECOND + micros })
    }

    /// Microseconds since midnight.
    pub fn micros(self) -> u64 {
        self.micros
    }

    /// `HH:MM:SS.` of `second` (since midnight): what the time of all lines within one second
    /// shares.
    fn whole_seconds(second: u64) -> [u8; 9] {
        let mut text = *b"00:00:00.";
        for (at, value) in [(0, second / 3600), (3, second / 60 % 60), (6, second % 60)] {
            text[at..at + 2].copy_from_slice(pair(value));
        }
        text
    }
}

impl fmt::Display for TimeOfDay {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let whole = TimeOfDay::whole_seconds(self.micros / MICROS_PER_SECOND);
        let whole = std::str::from_utf8(&whole).map_err(|_| fmt::Error)?;
        write!(f, "{whole}{:06}", self.micros % MICROS_PER_SECOND)
    }
}

/// One line of a log, as read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Event {
    /// The line number in the file (1-based, counting the header and blank lines).
    pub line: usize,
    /// The OS thread id (0 when the log has no Thread column).
    pub thread: u64,
    /// The Time field; None when the log has no Time column or the line's is not a time of
    /// day. File order is event order: only the timeline report's time axis reads it.
    pub time: Option<TimeOfDay>,
    /// What happened.
    pub action: Action,
    /// The logged address; 0 for `(nil)`.
    pub pointer: usize,
    /// The bytes asked for (a free's: the size its caller gave).
    pub size: usize,
    /// The logged stream handle; 0 for the default stream (and when there is no Stream column).
    pub stream: usize,
}

// ---------------------------------------------------------------------------------------------
// Reading

/// Where each column is in the lines of one log.
struct Columns {
    thread: Option<usize>,
    time: Option<usize>,
    action: usize,
    pointer: usize,
    size: usize,
    stream: Option<usize>,
    /// The fields a line needs: one past the last column used (the time is optional).
    needed: usize,
}

impl Columns {
    const STANDARD: Columns = Columns { thread: Some(0), time: Some(1), action: 2, pointer: 3, size: 4, stream: Some(5), needed: 6 };

    /// The columns a header line names; None when the line is no header (has no Action field).
    fn from_header(fields: &[&str]) -> Option<Result<Columns, String>> {
        let find = |name: &str| fields.iter().position(|f| f.trim().eq_ignore_ascii_case(name));
        let action = find("action")?;
        let require = |name: &str| find(name).ok_or_else(|| format!("the header has no {name} column (RMM writes {COLUMNS})"));
        let columns = (|| {
            let (pointer, size) = (require("Pointer")?, require("Size")?);
            let (thread, time, stream) = (find("thread"), find("time"), find("stream"));
            let needed = [Some(action), Some(pointer), Some(size), thread, stream].into_iter().flatten().max().unwrap_or(0) + 1;
            Ok(Columns { thread, time, action, pointer, size, stream, needed })
        })();
        Some(columns)
    }

    /// The event of line `line`, split into `fields`.
    fn event(&self, line: usize, fields: &[&str]) -> Result<Event, String> {
        if fields.len() < self.needed {
            return Err(format!("{} fields where the header needs at least {}", fields.len(), self.needed));
        }
        Ok(Event {
            line,
            thread: self.thread.map_or(0, |at| parse_thread(fields[at])),
            time: self.time.and_then(|at| fields.get(at)).and_then(|field| TimeOfDay::parse(field.trim())),
            action: Action::parse(fields[self.action])?,
            pointer: parse_pointer(fields[self.pointer])?,
            size: parse_bytes_field(fields[self.size])?,
            stream: match self.stream {
                Some(at) => parse_stream(fields[at])?,
                None => 0,
            },
        })
    }
}

/// A decimal number, or a hexadecimal one with a `0x` prefix.
fn parse_number(text: &str) -> Option<u64> {
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) if !hex.is_empty() => u64::from_str_radix(hex, 16).ok(),
        Some(_) => None,
        None => text.parse().ok(),
    }
}

fn parse_pointer(text: &str) -> Result<usize, String> {
    let text = text.trim();
    if ["(nil)", "nil", "null", "nullptr", "0"].iter().any(|null| text.eq_ignore_ascii_case(null)) {
        return Ok(0);
    }
    match text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
        Some(hex) => usize::from_str_radix(hex, 16).ok(),
        None => None,
    }
    .ok_or_else(|| format!("pointer {text:?} is neither 0x-prefixed hexadecimal nor (nil)"))
}

fn parse_bytes_field(text: &str) -> Result<usize, String> {
    let text = text.trim();
    text.parse().map_err(|_| format!("size {text:?} is not a decimal number of bytes"))
}

fn parse_stream(text: &str) -> Result<usize, String> {
    let text = text.trim();
    if text.eq_ignore_ascii_case("(nil)") {
        return Ok(0);
    }
    parse_number(text)
        .and_then(|n| usize::try_from(n).ok())
        .ok_or_else(|| format!("stream {text:?} is neither 0, 0x-prefixed hexadecimal nor decimal"))
}

/// Threads are only told apart, so a thread id in an unexpected format is kept as a hash.
fn parse_thread(text: &str) -> u64 {
    let text = text.trim();
    parse_number(text).unwrap_or_else(|| {
        use std::hash::{Hash, Hasher};
        let mut hasher = std::collections::hash_map::DefaultHasher::new();
        text.hash(&mut hasher);
        hasher.finish()
    })
}

/// Reads a log. The first non-blank line is the header (columns are found by name, in any
/// order, extra columns ignored; Action, Pointer and Size are required, Thread, Time and
/// Stream optional); a log without a header must have RMM's six columns in RMM's order. Blank
/// lines are skipped. Errors name the line and what is wrong with it; a Time field that is no
/// time of day is no error (the event's `time` is None).
pub fn parse_log(text: &str) -> Result<Vec<Event>, String> {
    let mut lines = text
        .lines()
        .enumerate()
        .map(|(at, line)| (at + 1, line.trim_start_matches('\u{feff}').trim()))
        .filter(|(_, line)| !line.is_empty());
    let Some((first_number, first)) = lines.next() else {
        return Err(format!("the log is empty (expected the header {COLUMNS})"));
    };
    let first_fields: Vec<&str> = first.split(',').collect();
    let mut events = Vec::new();
    let columns = match Columns::from_header(&first_fields) {
        Some(columns) => columns.map_err(|e| format!("line {first_number}: {e}"))?,
        None => {
            let event = Columns::STANDARD
                .event(first_number, &first_fields)
                .map_err(|e| format!("line {first_number}: no header ({COLUMNS}) and not an event either: {e}"))?;
            events.push(event);
            Columns::STANDARD
        }
    };
    for (number, line) in lines {
        let fields: Vec<&str> = line.split(',').collect();
        events.push(columns.event(number, &fields).map_err(|e| format!("line {number}: {e}"))?);
    }
    Ok(events)
}

// ---------------------------------------------------------------------------------------------
// Writing

/// The longest line: thread id (20 digits), time, the longest action, pointer, size and
/// stream (16 hex digits each with "0x", 20 digits), commas and the newline.
const LINE_MAX: usize = 20 + 1 + 15 + 1 + 16 + 1 + 18 + 1 + 20 + 1 + 18 + 1;

/// Room past the end of the text, so that pieces are copied as fixed-size blocks (a move or
/// two each, where a copy of a variable length is a call to memmove).
const SLACK: usize = 40;

/// "00" to "99", for writing two decimal digits at a time.
const PAIRS: &[u8; 200] = b"00010203040506070809101112131415161718192021222324252627282930313233343536373839404142434445464748495051525354555657585960616263646566676869707172737475767778798081828384858687888990919293949596979899";

/// The two digits of `value` (below 100).
fn pair(value: u64) -> &'static [u8] {
    &PAIRS[value as usize * 2..value as usize * 2 + 2]
}

/// `,action,` of each action (by its discriminant), padded to one block length.
const ACTION_FIELDS: [[u8; 18]; 3] = [action_field(Action::Allocate), action_field(Action::AllocateFailure), action_field(Action::Free)];

const fn action_field(action: Action) -> [u8; 18] {
    let word = action.as_str().as_bytes();
    let mut field = [0u8; 18];
    field[0] = b',';
    let mut at = 0;
    while at < word.len() {
        field[1 + at] = word[at];
        at += 1;
    }
    field[1 + word.len()] = b',';
    field
}

/// Lines of a log on their way to a file, formatted in place: formatting costs no
/// allocation and no copy of a line.
pub struct Lines {
    bytes: Vec<u8>,
    len: usize,
    /// The second (since midnight) whose `HH:MM:SS.` is in `whole_seconds`: formatted once
    /// per second of log time.
    second: u64,
    whole_seconds: [u8; 9],
}

impl Lines {
    /// Room for `capacity` bytes of lines (at least one line): few enough that they stay in
    /// the processor's cache, which a store into memory not cached waits for.
    pub fn new(capacity: usize) -> Self {
        Lines { bytes: vec![0; capacity.max(LINE_MAX) + SLACK], len: 0, second: u64::MAX, whole_seconds: *b"00:00:00." }
    }

    /// Whether another line fits; when not, write the lines out first.
    pub fn has_room_for_a_line(&self) -> bool {
        self.len + LINE_MAX + SLACK <= self.bytes.len()
    }

    /// Appends `thread,HH:MM:SS.ffffff,action,pointer,size,stream` and a newline, as RMM
    /// writes it: a null pointer as `(nil)`, the default stream (0) as `0`, other pointers and
    /// streams in hex. The caller has made sure of room for it ([`Lines::has_room_for_a_line`]).
    pub fn push(&mut self, thread: u64, time: TimeOfDay, action: Action, pointer: usize, size: usize, stream: usize) {
        self.number(thread);
        self.put(b",", 1);
        let second = time.micros / MICROS_PER_SECOND;
        if second != self.second {
            self.whole_seconds = TimeOfDay::whole_seconds(second);
            self.second = second;
        }
        let whole_seconds = self.whole_seconds;
        self.put(&whole_seconds, 9);
        self.padded_6(time.micros % MICROS_PER_SECOND);
        self.put(&ACTION_FIELDS[action as usize], action.as_str().len() + 2);
        match pointer {
            0 => self.put(b"(nil)", 5),
            pointer => self.hex(pointer),
        }
        self.put(b",", 1);
        self.number(size as u64);
        self.put(b",", 1);
        match stream {
            0 => self.put(b"0", 1),
            handle => self.hex(handle),
        }
        self.put(b"\n", 1);
    }

    /// The lines so far.
    pub fn as_bytes(&self) -> &[u8] {
        &self.bytes[..self.len]
    }

    /// Writes the lines to `file` and empties the text; the first write error goes to
    /// `failure`.
    pub fn write_out(&mut self, file: &mut impl Write, failure: &mut Option<String>) {
        if let Err(e) = file.write_all(self.as_bytes()) {
            failure.get_or_insert(e.to_string());
        }
        self.len = 0;
    }

    /// Appends the first `len` bytes of `block` (all of it is copied). The caller has made
    /// sure of room for a line, which no line's pieces together exceed.
    #[inline]
    fn put<const N: usize>(&mut self, block: &[u8; N], len: usize) {
        const { assert!(N <= SLACK) };
        self.bytes[self.len..self.len + N].copy_from_slice(block);
        self.len += len.min(N);
    }

    fn number(&mut self, mut value: u64) {
        let count = value.checked_ilog10().map_or(1, |log| log as usize + 1);
        let mut digits = [0u8; 20];
        let mut at = count;
        while at >= 2 {
            at -= 2;
            digits[at..at + 2].copy_from_slice(pair(value % 100));
            value /= 100;
        }
        if at == 1 {
            digits[0] = b'0' + value as u8;
        }
        self.put(&digits, count);
    }

    /// `value` (below 10^6) in six digits, with leading zeros.
    fn padded_6(&mut self, value: u64) {
        let mut digits = [0u8; 6];
        for (at, part) in [(0, value / 10_000), (2, value / 100 % 100), (4, value % 100)] {
            digits[at..at + 2].copy_from_slice(pair(part));
        }
        self.put(&digits, 6);
    }

    fn hex(&mut self, value: usize) {
        const DIGITS: &[u8; 16] = b"0123456789abcdef";
        let count = ((usize::BITS - value.leading_zeros()).div_ceil(4) as usize).max(1);
        let mut digits = *b"0x0000000000000000";
        for at in 0..count {
            digits[2 + count - 1 - at] = DIGITS[(value >> (4 * at)) & 15];
        }
        self.put(&digits, 2 + count);
    }
}

#[cfg(test)]
mod tests {
    use super::{parse_log, Action, Event, Lines, TimeOfDay, COLUMNS};

    /// Lines come out exactly as RMM writes them, whatever the widths of the numbers.
    #[test]
    fn lines_are_rmm_csv() {
        // 1970-01-02 13:04:05.000042 UTC is 14:04:05.000042 an hour east of UTC.
        let time = TimeOfDay::from_unix_ns((86_400 + 13 * 3600 + 4 * 60 + 5) * 1_000_000_000 + 42_999, 3600);
        let cases = [
            ((7, time, Action::Allocate, 0x7f3a_4000_0000, 1024, 0), "7,14:04:05.000042,allocate,0x7f3a40000000,1024,0\n"),
            (
                (4031547, time, Action::AllocateFailure, 0, 123456789012, 0x55d0_0a1b_2c30),
                "4031547,14:04:05.000042,allocate failure,(nil),123456789012,0x55d00a1b2c30\n",
            ),
            (
                (u64::from(u32::MAX), TimeOfDay::from_unix_ns(0, 3600), Action::Free, usize::MAX, 0, 1),
                "4294967295,01:00:00.000000,free,0xffffffffffffffff,0,0x1\n",
            ),
            (
                (u64::MAX, TimeOfDay::from_unix_ns(59_999_999_999, -7200), Action::Free, 1, usize::MAX, usize::MAX),
                "18446744073709551615,22:00:59.999999,free,0x1,18446744073709551615,0xffffffffffffffff\n",
            ),
        ];
        let mut lines = Lines::new(0);
        for ((thread, time, action, pointer, size, stream), expected) in cases {
            assert!(lines.has_room_for_a_line());
            lines.push(thread, time, action, pointer, size, stream);
            assert_eq!(std::str::from_utf8(lines.as_bytes()).unwrap(), expected);
            lines.write_out(&mut std::io::sink(), &mut None);
        }
    }

    /// What `Lines` writes, `parse_log` reads back as it was, the time of day included.
    #[test]
    fn written_lines_parse_back() {
        let mut lines = Lines::new(1 << 12);
        let mut text = format!("{COLUMNS}\n").into_bytes();
        let mut expected = Vec::new();
        let mut seed = 0x9e37_79b9_7f4a_7c15u64;
        let mut next = move || {
            seed ^= seed << 13;
            seed ^= seed >> 7;
            seed ^= seed << 17;
            seed
        };
        for line in 2..200 {
            let time = TimeOfDay::from_unix_ns(next() >> 4, next() as i64 % 50_400);
            let action = [Action::Allocate, Action::AllocateFailure, Action::Free][next() as usize % 3];
            let pointer = if action == Action::AllocateFailure { 0 } else { next() as usize >> (next() % 64) };
            let (thread, size, stream) = (next() >> (next() % 64), next() as usize >> (next() % 64), [0, 1, 2, next() as usize][line % 4]);
            if !lines.has_room_for_a_line() {
                lines.write_out(&mut text, &mut None);
            }
            lines.push(thread, time, action, pointer, size, stream);
            expected.push(Event { line, thread, time: Some(time), action, pointer, size, stream });
        }
        lines.write_out(&mut text, &mut None);
        assert_eq!(parse_log(std::str::from_utf8(&text).unwrap()).unwrap(), expected);
    }

    #[test]
    fn times_of_day_parse_as_written_and_in_other_precisions() {
        let parse = |text: &str| TimeOfDay::parse(text).map(|time| (time.micros(), time.to_string()));
        assert_eq!(parse("14:03:07.123456"), Some((50_587_123_456, "14:03:07.123456".to_string())));
        assert_eq!(parse("00:00:00"), Some((0, "00:00:00.000000".to_string())));
        assert_eq!(parse("23:59:59.5"), Some((86_399_500_000, "23:59:59.500000".to_string())));
        assert_eq!(parse("01:02:03.1234567"), Some((3_723_123_456, "01:02:03.123456".to_string())));
        for text in ["", "t", "14:03", "24:00:00", "12:60:00", "12:00:61", "12:00:0x", "12:00:07.5s", "old-format-time"] {
            assert_eq!(TimeOfDay::parse(text), None, "{text:?}");
        }
    }
}
