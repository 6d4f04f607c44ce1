//! The live terminal view of `toolwire chat` and `toolwire demo`: one status line at the bottom
//! that shows the call whose arguments are streaming (the member being written and its latest
//! text, read with [`toolwire::partial_json`]) or a spinner with the tools running and their
//! elapsed times; permanent lines are printed above it.
//!
//! It is only used when the output is a terminal ([`std::io::IsTerminal`]); otherwise the
//! commands print plain lines. Each status update costs O(1) in the argument size: the line
//! shows the current pointer and a bounded tail of its text, never the whole value.

use std::collections::BTreeMap;
use std::io::Write;
use std::time::{Duration, Instant};

use toolwire::partial_json::{Kind, PartialEvent, PartialJson};

const SPINNER: [char; 10] = ['⠋', '⠙', '⠹', '⠸', '⠼', '⠴', '⠦', '⠧', '⠇', '⠏'];

/// How many characters of a string's latest text the status line keeps.
const TAIL: usize = 48;

/// A call whose arguments are streaming.
struct Streaming {
    name: String,
    reader: PartialJson,
    /// The pointer being written and the latest text there.
    pointer: String,
    tail: String,
    bytes: usize,
    since: Instant,
}

/// The live view. All output goes to one stream (standard output for the demo, standard error
/// for chat, whose standard output is the answer).
pub(crate) struct Live {
    to_stderr: bool,
    width: usize,
    frame: usize,
    /// Whether the status line is on screen (the cursor is at its end).
    shown: bool,
    /// Text is being written mid-line (on standard error: `Some(true)`): no status line until
    /// it ends.
    inline: Option<bool>,
    calls: BTreeMap<usize, Streaming>,
    running: BTreeMap<String, (String, Instant)>,
}

impl Live {
    /// A view writing to standard error (`true`) or standard output.
    pub(crate) fn new(to_stderr: bool) -> Self {
        let width = std::env::var("COLUMNS")
            .ok()
            .and_then(|c| c.trim().parse::<usize>().ok())
            .filter(|&w| w >= 20)
            .unwrap_or(80);
        Self {
            to_stderr,
            width,
            frame: 0,
            shown: false,
            inline: None,
            calls: BTreeMap::new(),
            running: BTreeMap::new(),
        }
    }

    fn write(&self, text: &str) {
        self.write_to(self.to_stderr, text);
    }

    fn write_to(&self, stderr: bool, text: &str) {
        let result = if stderr {
            let mut err = std::io::stderr().lock();
            err.write_all(text.as_bytes()).and_then(|()| err.flush())
        } else {
            let mut out = std::io::stdout().lock();
            out.write_all(text.as_bytes()).and_then(|()| out.flush())
        };
        if let Err(e) = result
            && e.kind() == std::io::ErrorKind::BrokenPipe
        {
            std::process::exit(0);
        }
    }

    /// Removes the status line so a permanent line can take its place.
    fn clear(&mut self) {
        if self.shown {
            self.write("\r\x1b[2K");
            self.shown = false;
        }
    }

    /// Prints a permanent line above the status line.
    pub(crate) fn line(&mut self, text: &str) {
        self.clear();
        self.end_text();
        self.write(text);
        self.write("\n");
        self.draw();
    }

    /// Whether inline text is being written.
    pub(crate) fn is_inline(&self) -> bool {
        self.inline.is_some()
    }

    /// Text streamed inline on standard output (the model's answer): the status line gives
    /// way until the text ends.
    pub(crate) fn inline(&mut self, text: &str) {
        self.inline_to(false, text);
    }

    /// Text streamed inline on the view's own stream (chat's reasoning on standard error).
    pub(crate) fn inline_note(&mut self, text: &str) {
        self.inline_to(self.to_stderr, text);
    }

    fn inline_to(&mut self, stderr: bool, text: &str) {
        self.clear();
        if self.inline.is_some_and(|s| s != stderr) {
            self.end_text();
        }
        self.inline = Some(stderr);
        self.write_to(stderr, text);
    }

    fn end_text(&mut self) {
        if let Some(stderr) = self.inline.take() {
            self.write_to(stderr, "\n");
        }
    }

    /// Ends inline text.
    pub(crate) fn end_inline(&mut self) {
        if self.inline.is_some() {
            self.end_text();
            self.draw();
        }
    }

    /// A call began streaming.
    pub(crate) fn call_started(&mut self, index: usize, name: &str) {
        self.end_inline();
        self.calls.insert(
            index,
            Streaming {
                name: name.to_owned(),
                reader: PartialJson::new(),
                pointer: String::new(),
                tail: String::new(),
                bytes: 0,
                since: Instant::now(),
            },
        );
        self.draw();
    }

    /// A fragment of a call's arguments.
    pub(crate) fn call_fragment(&mut self, index: usize, fragment: &str) {
        let Some(call) = self.calls.get_mut(&index) else {
            return;
        };
        call.bytes += fragment.len();
        let mut events = Vec::new();
        call.reader.feed(fragment, &mut events);
        for event in events {
            match event {
                PartialEvent::Started { pointer, kind } => {
                    call.pointer = pointer.to_string();
                    call.tail = match kind {
                        Kind::Object => "{".into(),
                        Kind::Array => "[".into(),
                        Kind::String => "\"".into(),
                        _ => String::new(),
                    };
                }
                PartialEvent::Text { text, .. } => {
                    call.tail.push_str(&text);
                    keep_tail(&mut call.tail, TAIL);
                }
                PartialEvent::Scalar { value, .. } => call.tail = value.to_string(),
                PartialEvent::Invalid { offset, .. } => {
                    call.tail = format!("(not JSON from byte {offset})");
                }
                _ => {}
            }
        }
        self.draw();
    }

    /// A call is final: its status gives way to `summary`, printed for good, with the time its
    /// arguments took to stream.
    pub(crate) fn call_complete(&mut self, index: usize, summary: &str) {
        let took = self.calls.remove(&index).map(|c| c.since.elapsed());
        let took = took.map_or_else(String::new, |t| format!("  ({} to stream)", elapsed(t)));
        self.line(&format!("{summary}{took}"));
    }

    /// A tool began running.
    pub(crate) fn tool_started(&mut self, id: &str, name: &str) {
        self.running
            .insert(id.to_owned(), (name.to_owned(), Instant::now()));
        self.draw();
    }

    /// A tool finished; returns how long it ran (when it was seen starting).
    pub(crate) fn tool_finished(&mut self, id: &str) -> Option<Duration> {
        self.running.remove(id).map(|(_, since)| since.elapsed())
    }

    /// Advances the spinner (called every ~100 ms while the run waits).
    pub(crate) fn tick(&mut self) {
        if !self.calls.is_empty() || !self.running.is_empty() {
            self.frame = self.frame.wrapping_add(1);
            self.draw();
        }
    }

    /// The run is over: no status line remains.
    pub(crate) fn finish(&mut self) {
        self.clear();
        self.end_inline();
    }

    fn draw(&mut self) {
        if self.inline.is_some() {
            return;
        }
        let spin = SPINNER[self.frame % SPINNER.len()];
        let status = if let Some((index, call)) = self.calls.iter().next_back() {
            let at = match (call.pointer.as_str(), call.tail.as_str()) {
                ("", "") => String::new(),
                ("", tail) => format!(" {tail}"),
                (pointer, tail) => format!(" {pointer} = {tail}"),
            };
            format!(
                "{spin} call [{index}] {}{at}  ({} B, {})",
                call.name,
                call.bytes,
                elapsed(call.since.elapsed())
            )
        } else if !self.running.is_empty() {
            let tools: Vec<String> = self
                .running
                .iter()
                .map(|(id, (name, since))| format!("{name} ({id}) {}", elapsed(since.elapsed())))
                .collect();
            format!("{spin} running {}", tools.join(", "))
        } else {
            self.clear();
            return;
        };
        let status: String = status
            .chars()
            .map(|c| if c.is_control() { ' ' } else { c })
            .take(self.width.saturating_sub(1))
            .collect();
        self.write(&format!("\r\x1b[2K{status}"));
        self.shown = true;
    }
}

/// Keeps the last `n` characters of `text`.
fn keep_tail(text: &mut String, n: usize) {
    let count = text.chars().count();
    if count > n * 2 {
        let cut = text.char_indices().nth(count - n).map_or(0, |(i, _)| i);
        text.replace_range(..cut, "…");
    }
}

/// `12 ms`, `1.3 s`.
pub(crate) fn elapsed(d: Duration) -> String {
    if d < Duration::from_secs(1) {
        format!("{} ms", d.as_millis())
    } else {
        format!("{:.1} s", d.as_secs_f64())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tails_stay_bounded_and_times_read_well() {
        let mut s = "é".repeat(200);
        keep_tail(&mut s, 10);
        assert_eq!(s.chars().count(), 11);
        assert!(s.starts_with('…'));
        assert_eq!(elapsed(Duration::from_millis(42)), "42 ms");
        assert_eq!(elapsed(Duration::from_millis(1250)), "1.2 s");
    }
}
