//! Special-token formats: DeepSeek V3 / R1 (`<｜tool▁call▁begin｜>function<｜tool▁sep｜>NAME`
//! and a fenced JSON block) and V3.1 (`<｜tool▁call▁begin｜>NAME<｜tool▁sep｜>{…}`), and Kimi K2
//! (`<|tool_call_begin|>functions.NAME:0<|tool_call_argument_begin|>{…}<|tool_call_end|>`).
//! Argument text streams as it arrives.

use super::{Lit, Piece, Recogniser, State, TextCallFormat, Until, lit, lit_any};

const DS_CALL: &str = "<｜tool▁call▁begin｜>";
const DS_SEP: &str = "<｜tool▁sep｜>";
const DS_CALL_END: &str = "<｜tool▁call▁end｜>";
const DS_CALLS_END: &str = "<｜tool▁calls▁end｜>";
const KIMI_CALL: &str = "<|tool_call_begin|>";
const KIMI_ARGS: &str = "<|tool_call_argument_begin|>";
const KIMI_CALL_END: &str = "<|tool_call_end|>";

/// The tool name in a Kimi call id: `functions.NAME:0` → `NAME`.
pub(super) fn kimi_name(id: &str) -> &str {
    let base = match id.rsplit_once(':') {
        Some((name, index)) if index.bytes().all(|b| b.is_ascii_digit()) => name,
        _ => id,
    };
    base.strip_prefix("functions.").unwrap_or(base)
}

impl Recogniser {
    /// Between sections' calls: the next call, the section's end, or (anything else) text.
    fn section(&mut self, call: &'static str, ends: &[&'static str], state: State) -> bool {
        if !self.skip_ws() {
            return false;
        }
        let mut markers = vec![call];
        markers.extend_from_slice(ends);
        match lit_any(self.rest(), &markers) {
            Err(()) => false,
            Ok(Some(m)) => {
                self.consume(self.at + m.len());
                self.goto(if m == call { state } else { State::Text })
            }
            Ok(None) => self.goto(State::Text),
        }
    }

    pub(super) fn step_ds_section(&mut self, _eof: bool) -> bool {
        self.section(DS_CALL, &[DS_CALLS_END], State::DsHead)
    }

    pub(super) fn step_ds_head(&mut self, out: &mut Vec<Piece>) -> bool {
        match self.until(&[DS_SEP]) {
            Until::Found(pos, marker) => {
                let head = self.buf[self.at..pos].trim().to_owned();
                self.consume(pos + marker.len());
                if head == "function" {
                    // V3 / R1: the type, then the name on the separator's line.
                    self.goto(State::DsName)
                } else {
                    self.start(&head, TextCallFormat::Deepseek, out);
                    self.goto(State::DsArgs { fenced: false })
                }
            }
            Until::Safe(_) => false,
        }
    }

    pub(super) fn step_ds_name(&mut self, out: &mut Vec<Piece>) -> bool {
        match self.until(&["\n", "```"]) {
            Until::Found(pos, marker) => {
                let name = self.buf[self.at..pos].trim().to_owned();
                self.start(&name, TextCallFormat::Deepseek, out);
                let to = if marker == "\n" { pos + 1 } else { pos };
                self.consume(to);
                self.goto(State::DsFence)
            }
            Until::Safe(_) => false,
        }
    }

    pub(super) fn step_ds_fence(&mut self) -> bool {
        if !self.skip_ws() {
            return false;
        }
        match lit_any(self.rest(), &["```json", "```"]) {
            Err(()) => false,
            Ok(Some(m)) => {
                self.consume(self.at + m.len());
                self.goto(State::DsArgs { fenced: true })
            }
            Ok(None) => self.goto(State::DsArgs { fenced: false }),
        }
    }

    pub(super) fn step_ds_args(&mut self, fenced: bool, out: &mut Vec<Piece>) -> bool {
        let markers: &[&'static str] = if fenced {
            &["```", DS_CALL_END]
        } else {
            &[DS_CALL_END]
        };
        match self.stream_to(markers, out) {
            Some((pos, marker)) => {
                self.end(out);
                self.consume(pos + marker.len());
                self.goto(if marker == DS_CALL_END {
                    State::DsSection
                } else {
                    State::DsAfter
                })
            }
            None => false,
        }
    }

    pub(super) fn step_ds_after(&mut self, _eof: bool) -> bool {
        if !self.skip_ws() {
            return false;
        }
        match lit(self.rest(), DS_CALL_END) {
            Lit::Yes => {
                self.consume(self.at + DS_CALL_END.len());
                self.goto(State::DsSection)
            }
            Lit::Maybe => false,
            Lit::No => self.goto(State::DsSection),
        }
    }

    pub(super) fn step_kimi_section(&mut self, _eof: bool) -> bool {
        self.section(
            KIMI_CALL,
            &["<|tool_calls_section_end|>", "<|tool_call_section_end|>"],
            State::KimiId,
        )
    }

    pub(super) fn step_kimi_id(&mut self, out: &mut Vec<Piece>) -> bool {
        match self.until(&[KIMI_ARGS]) {
            Until::Found(pos, marker) => {
                let id = self.buf[self.at..pos].trim().to_owned();
                let name = kimi_name(&id).to_owned();
                self.start(&name, TextCallFormat::Kimi, out);
                self.consume(pos + marker.len());
                self.goto(State::KimiArgs)
            }
            Until::Safe(_) => false,
        }
    }

    pub(super) fn step_kimi_args(&mut self, out: &mut Vec<Piece>) -> bool {
        match self.stream_to(&[KIMI_CALL_END], out) {
            Some((pos, marker)) => {
                self.end(out);
                self.consume(pos + marker.len());
                self.goto(State::KimiSection)
            }
            None => false,
        }
    }
}
