//! `<tool_call>` blocks: Hermes / Qwen2.5 JSON bodies, Qwen3-Coder XML
//! (`<function=NAME><parameter=K>V</parameter></function>`, also without the wrapper) and GLM
//! (`NAME<arg_key>K</arg_key><arg_value>V</arg_value>`). The body's first bytes say which.

use super::{Lit, Name, Recogniser, State, TextCallFormat, lit, lit_any};
use crate::text_calls::Piece;

impl Recogniser {
    /// After `<tool_call>`: `{` opens Hermes JSON, `<function=` Qwen3-Coder XML, a name then
    /// `<arg_key>` or `</tool_call>` GLM; anything else was prose and the marker is text.
    pub(super) fn step_tag(&mut self, skip: usize, _eof: bool, out: &mut Vec<Piece>) -> bool {
        let from = self.at + skip;
        let body = &self.buf[from..];
        let blank = body.len() - body.trim_start().len();
        let Some(c) = body[blank..].chars().next() else {
            return false;
        };
        let first = from + blank;
        if c == '{' && self.allowed(TextCallFormat::Hermes) {
            self.consume(first);
            return self.goto(State::HermesBody);
        }
        if c == '<' && self.allowed(TextCallFormat::QwenXml) {
            match lit(&self.buf[first..], "<function=") {
                Lit::Yes => {
                    self.consume(first);
                    self.keep(State::QwenName {
                        skip: "<function=".len(),
                        wrapped: true,
                    });
                    return true;
                }
                Lit::Maybe => return false,
                Lit::No => {}
            }
        }
        if c != '<' && c != '{' && self.allowed(TextCallFormat::Glm) {
            match self.read_name(first, &["<arg_key>", "</tool_call>"]) {
                Name::Need => return false,
                Name::Got { end, at, .. } => {
                    let name = self.buf[first..end].to_owned();
                    self.start(&name, TextCallFormat::Glm, out);
                    self.consume(at);
                    return self.goto(State::GlmBody);
                }
                Name::Bad => {}
            }
        }
        // Prose that mentions the tag: the marker is text, reading goes on after it.
        self.text_to(from, out);
        self.goto(State::Text)
    }

    pub(super) fn step_hermes(&mut self, out: &mut Vec<Piece>) -> bool {
        match self.until(&["</tool_call>"]) {
            super::Until::Found(pos, marker) => {
                let body = self.buf[self.at..pos].trim().to_owned();
                self.json_call(&body, true, TextCallFormat::Hermes, out);
                self.consume(pos + marker.len());
                self.goto(State::Text)
            }
            super::Until::Safe(_) => false,
        }
    }

    pub(super) fn step_qwen_name(
        &mut self,
        skip: usize,
        wrapped: bool,
        out: &mut Vec<Piece>,
    ) -> bool {
        let from = self.at + skip;
        match self.read_name(from, &[">"]) {
            Name::Need => false,
            Name::Bad => {
                // `<function=` in prose: text.
                self.text_to(from, out);
                self.goto(State::Text)
            }
            Name::Got { end, at, .. } => {
                let name = self.buf[from..end].to_owned();
                self.start(&name, TextCallFormat::QwenXml, out);
                self.consume(at + 1);
                self.goto(State::QwenBody { wrapped })
            }
        }
    }

    pub(super) fn step_qwen_body(&mut self, wrapped: bool, out: &mut Vec<Piece>) -> bool {
        if !self.skip_ws() {
            return false;
        }
        match lit_any(self.rest(), &["<parameter=", "</function>", "</tool_call>"]) {
            Err(()) => false,
            Ok(Some(m)) => {
                self.consume(self.at + m.len());
                match m {
                    "<parameter=" => self.goto(State::QwenKey { wrapped }),
                    "</function>" => {
                        self.close_params(out);
                        self.goto(State::QwenAfter { wrapped })
                    }
                    _ => {
                        self.close_params(out);
                        self.goto(State::Text)
                    }
                }
            }
            Ok(None) => self.skip_stray(),
        }
    }

    /// A stray character between parameters: left out.
    fn skip_stray(&mut self) -> bool {
        let n = self.rest().chars().next().map_or(0, char::len_utf8);
        self.consume(self.at + n);
        n > 0
    }

    pub(super) fn step_qwen_key(&mut self, wrapped: bool) -> bool {
        match self.until(&[">"]) {
            super::Until::Found(pos, _) => {
                self.key = self.buf[self.at..pos].trim().to_owned();
                self.consume(pos + 1);
                self.goto(State::QwenValue { wrapped })
            }
            super::Until::Safe(_) => false,
        }
    }

    pub(super) fn step_qwen_value(&mut self, wrapped: bool, out: &mut Vec<Piece>) -> bool {
        match self.until(&["</parameter>"]) {
            super::Until::Found(pos, marker) => {
                // The template puts the value on lines of its own: one line break each side
                // is the template's, not the value's.
                let raw = &self.buf[self.at..pos];
                let raw = raw.strip_prefix('\n').unwrap_or(raw);
                let raw = raw.strip_suffix('\n').unwrap_or(raw);
                let key = std::mem::take(&mut self.key);
                let value = self.typed(&key, raw);
                self.param(&key, value, out);
                self.consume(pos + marker.len());
                self.goto(State::QwenBody { wrapped })
            }
            super::Until::Safe(_) => false,
        }
    }

    pub(super) fn step_qwen_after(&mut self, wrapped: bool, _eof: bool) -> bool {
        if !wrapped {
            return self.goto(State::Text);
        }
        let rest = self.rest();
        let blank = rest.len() - rest.trim_start().len();
        if blank == rest.len() {
            return false;
        }
        match lit(&rest[blank..], "</tool_call>") {
            Lit::Yes => {
                self.consume(self.at + blank + "</tool_call>".len());
                self.goto(State::Text)
            }
            Lit::Maybe => false,
            Lit::No => self.goto(State::Text),
        }
    }

    pub(super) fn step_glm_body(&mut self, out: &mut Vec<Piece>) -> bool {
        if !self.skip_ws() {
            return false;
        }
        match lit_any(self.rest(), &["<arg_key>", "</tool_call>"]) {
            Err(()) => false,
            Ok(Some(m)) => {
                self.consume(self.at + m.len());
                if m == "<arg_key>" {
                    self.goto(State::GlmKey)
                } else {
                    self.close_params(out);
                    self.goto(State::Text)
                }
            }
            Ok(None) => self.skip_stray(),
        }
    }

    pub(super) fn step_glm_key(&mut self) -> bool {
        match self.until(&["</arg_key>"]) {
            super::Until::Found(pos, marker) => {
                self.key = self.buf[self.at..pos].trim().to_owned();
                self.consume(pos + marker.len());
                self.goto(State::GlmBetween)
            }
            super::Until::Safe(_) => false,
        }
    }

    pub(super) fn step_glm_between(&mut self) -> bool {
        if !self.skip_ws() {
            return false;
        }
        match lit(self.rest(), "<arg_value>") {
            Lit::Yes => {
                self.consume(self.at + "<arg_value>".len());
                self.goto(State::GlmValue)
            }
            Lit::Maybe => false,
            Lit::No => self.skip_stray(),
        }
    }

    pub(super) fn step_glm_value(&mut self, out: &mut Vec<Piece>) -> bool {
        match self.until(&["</arg_value>"]) {
            super::Until::Found(pos, marker) => {
                let raw = self.buf[self.at..pos].to_owned();
                let key = std::mem::take(&mut self.key);
                let value = self.typed(&key, &raw);
                self.param(&key, value, out);
                self.consume(pos + marker.len());
                self.goto(State::GlmBody)
            }
            super::Until::Safe(_) => false,
        }
    }
}
