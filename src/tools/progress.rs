//! Progress while a tool runs, for the people waiting on it (never for the model).
//!
//! A handler reports how far it is ([`Reporter::report`]) and a short human summary of what the
//! call does ([`Reporter::summary`]: "Searching 3 wikis…"). Whoever dispatched the call with
//! [`ToolRegistry::dispatch_reporting`](super::ToolRegistry::dispatch_reporting) reads them from
//! [`Reports`]; the agent turns them into events, `toolwire serve` streams them and shows them
//! on its page. Nothing reported here goes into the tool's result or the conversation.
//!
//! Reporting never blocks and never fails: the reporter keeps only the latest progress and the
//! latest summary (a newer value replaces one not read yet), so a handler that reports in a
//! tight loop costs a lock and a copy per report, and the reader sees at most one update per
//! [`REPORT_INTERVAL`]. Without a reader (a plain [`ToolRegistry::dispatch`](super::ToolRegistry::dispatch),
//! a handler called directly) reporting does nothing.

use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Duration;

use tokio::sync::Notify;
use tokio::time::Instant;

/// The shortest time between two updates a reader receives; reports in between are coalesced
/// (the latest wins).
pub const REPORT_INTERVAL: Duration = Duration::from_millis(50);

/// The longest summary kept (bytes; longer ones are cut at a character boundary, marked `…`).
pub const MAX_SUMMARY_BYTES: usize = 256;

/// The longest progress message kept (bytes; cut the same way).
pub const MAX_MESSAGE_BYTES: usize = 1024;

/// How far a call is: `progress` out of `total` (when known), with an optional message. The
/// shape of MCP's `notifications/progress`.
#[derive(Debug, Clone, PartialEq, serde::Serialize, serde::Deserialize)]
#[non_exhaustive]
pub struct Progress {
    /// The progress so far; it should grow with each report, even when the total is unknown.
    pub progress: f64,
    /// The total, when known.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub total: Option<f64>,
    /// What is happening now ("fetched page 2 of 3").
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,
}

impl Progress {
    /// `progress` out of an unknown total, without a message.
    pub fn new(progress: f64) -> Self {
        Self {
            progress,
            total: None,
            message: None,
        }
    }

    /// Sets the total.
    pub fn with_total(mut self, total: f64) -> Self {
        self.total = Some(total);
        self
    }

    /// Sets the message.
    pub fn with_message(mut self, message: impl Into<String>) -> Self {
        self.message = Some(message.into());
        self
    }

    /// Whether the numbers are usable: finite, and not negative.
    fn is_sane(&self) -> bool {
        let ok = |n: f64| n.is_finite() && n >= 0.0;
        ok(self.progress) && self.total.is_none_or(ok)
    }
}

/// `2/3 (67%): fetched page 2`: the progress, the total and share when known, the message.
impl std::fmt::Display for Progress {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "{}", self.progress)?;
        if let Some(total) = self.total {
            write!(f, "/{total}")?;
            if total > 0.0 {
                write!(f, " ({:.0}%)", 100.0 * self.progress / total)?;
            }
        }
        if let Some(message) = &self.message {
            write!(f, ": {message}")?;
        }
        Ok(())
    }
}

/// One update a reader receives: the latest progress, the latest summary, or both.
#[derive(Debug, Clone, PartialEq, Default)]
#[non_exhaustive]
pub struct Update {
    /// A progress report newer than the last update, if there is one.
    pub progress: Option<Progress>,
    /// A summary newer than the last update, if there is one.
    pub summary: Option<String>,
}

impl Update {
    fn is_empty(&self) -> bool {
        self.progress.is_none() && self.summary.is_none()
    }
}

/// The latest values not yet read, shared by a reporter and its reader.
#[derive(Default)]
struct Cell {
    fresh: Mutex<Update>,
    notify: Notify,
}

impl Cell {
    fn lock(&self) -> MutexGuard<'_, Update> {
        self.fresh.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// What a handler reports progress through: cheap to clone, never blocks, never fails, and
/// does nothing when nobody listens. A handler gets it as [`ToolInput::progress`](super::ToolInput::progress)
/// or, anywhere in the handler's task (a [`TypedTool`](super::TypedTool), a `#[toolwire::tool]`
/// function), from [`Reporter::current`].
///
/// ```
/// use toolwire::tools::{Progress, Reporter};
///
/// let (reporter, mut reports) = Reporter::channel();
/// reporter.summary("Searching 3 wikis…");
/// reporter.report(Progress::new(1.0).with_total(3.0).with_message("first wiki done"));
/// reporter.report(Progress::new(2.0).with_total(3.0)); // replaces the report not read yet
/// let update = reports.take();
/// assert_eq!(update.summary.as_deref(), Some("Searching 3 wikis…"));
/// assert_eq!(update.progress, Some(Progress::new(2.0).with_total(3.0)));
/// ```
#[derive(Clone, Default)]
pub struct Reporter {
    cell: Option<Arc<Cell>>,
    questions: Option<super::input::Questions>,
}

impl std::fmt::Debug for Reporter {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reporter")
            .field("listened", &self.cell.is_some())
            .field("asks", &self.questions.is_some())
            .finish()
    }
}

/// Two reporters are equal when they report to the same reader (or both to none).
impl PartialEq for Reporter {
    fn eq(&self, other: &Self) -> bool {
        match (&self.cell, &other.cell) {
            (Some(a), Some(b)) => Arc::ptr_eq(a, b),
            (None, None) => true,
            _ => false,
        }
    }
}

tokio::task_local! {
    static CURRENT: Reporter;
}

impl Reporter {
    /// A reporter nobody listens to: every report is dropped.
    pub fn none() -> Self {
        Self::default()
    }

    /// A reporter and the reader of what it reports.
    pub fn channel() -> (Self, Reports) {
        let cell = Arc::new(Cell::default());
        let reports = Reports {
            cell: Arc::clone(&cell),
            next_at: None,
        };
        let reporter = Self {
            cell: Some(cell),
            questions: None,
        };
        (reporter, reports)
    }

    /// Sends the questions a handler asks ([`Reporter::ask`]) to `questions`, for the people
    /// waiting to answer (the agent turns them into `AgentEvent::InputRequested`).
    pub fn with_questions(mut self, questions: super::input::Questions) -> Self {
        self.questions = Some(questions);
        self
    }

    /// Whether someone takes the questions [`Reporter::ask`] asks.
    pub fn takes_questions(&self) -> bool {
        self.questions.is_some()
    }

    /// Asks the people waiting for input and waits for the answer; declined when nobody
    /// takes questions or nobody answers.
    pub async fn ask(&self, request: super::input::InputRequest) -> super::input::InputAnswer {
        match &self.questions {
            Some(questions) => questions.ask(request).await,
            None => super::input::InputAnswer::Decline,
        }
    }

    /// The reporter of the call whose handler is running in this task; a reporter nobody
    /// listens to outside a handler (and in tasks a handler spawns: pass them a clone).
    pub fn current() -> Self {
        CURRENT.try_with(Clone::clone).unwrap_or_default()
    }

    /// Runs `future` with this reporter as [`Reporter::current`].
    pub(crate) async fn scope<F: std::future::Future>(self, future: F) -> F::Output {
        CURRENT.scope(self, future).await
    }

    /// Whether someone listens (a handler may skip work that only feeds reports).
    pub fn is_listened(&self) -> bool {
        self.cell.is_some()
    }

    /// Reports how far the call is. A report with a progress or total that is not a finite,
    /// non-negative number is dropped; a long message is cut to [`MAX_MESSAGE_BYTES`].
    pub fn report(&self, progress: Progress) {
        let Some(cell) = &self.cell else { return };
        if !progress.is_sane() {
            return;
        }
        let progress = Progress {
            message: progress.message.map(|m| cut(m, MAX_MESSAGE_BYTES)),
            ..progress
        };
        cell.lock().progress = Some(progress);
        cell.notify.notify_one();
    }

    /// Sets the short human summary of the call ("Searching 3 wikis…"), cut to
    /// [`MAX_SUMMARY_BYTES`]. It is for the people waiting, never for the model.
    pub fn summary(&self, summary: impl Into<String>) {
        let Some(cell) = &self.cell else { return };
        cell.lock().summary = Some(cut(summary.into(), MAX_SUMMARY_BYTES));
        cell.notify.notify_one();
    }
}

/// The reading side of a [`Reporter`]: the latest values, at most one update per
/// [`REPORT_INTERVAL`].
pub struct Reports {
    cell: Arc<Cell>,
    next_at: Option<Instant>,
}

impl std::fmt::Debug for Reports {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Reports").finish_non_exhaustive()
    }
}

impl Reports {
    /// Waits for the next update (no sooner than [`REPORT_INTERVAL`] after the last one).
    /// Never ends by itself: read it beside the call and stop when the call has finished
    /// (then [`Reports::take`] what came last). Cancel-safe.
    pub async fn next(&mut self) -> Update {
        if let Some(at) = self.next_at {
            tokio::time::sleep_until(at).await;
        }
        let cell = Arc::clone(&self.cell);
        loop {
            let notified = cell.notify.notified();
            let update = self.take();
            if !update.is_empty() {
                return update;
            }
            notified.await;
        }
    }

    /// What was reported since the last update, at once (empty when nothing was).
    pub fn take(&mut self) -> Update {
        let update = std::mem::take(&mut *self.cell.lock());
        if !update.is_empty() {
            self.next_at = Some(Instant::now() + REPORT_INTERVAL);
        }
        update
    }
}

/// `text` cut to at most `max` bytes at a character boundary, marked with `…` when cut.
fn cut(mut text: String, max: usize) -> String {
    if text.len() <= max {
        return text;
    }
    let mark = "…";
    let mut at = max - mark.len();
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    text.truncate(at);
    text.push_str(mark);
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_reads_as_a_line() {
        let p = Progress::new(2.0).with_total(3.0).with_message("page 2");
        assert_eq!(p.to_string(), "2/3 (67%): page 2");
        assert_eq!(Progress::new(1.5).to_string(), "1.5");
        assert_eq!(Progress::new(0.0).with_total(0.0).to_string(), "0/0");
    }

    #[test]
    fn nobody_listening_is_a_no_op() {
        let reporter = Reporter::none();
        reporter.report(Progress::new(1.0));
        reporter.summary("x");
        assert!(!reporter.is_listened());
        assert!(!Reporter::current().is_listened());
    }

    #[test]
    fn reports_are_coalesced_and_checked() {
        let (reporter, mut reports) = Reporter::channel();
        for i in 0..10_000 {
            reporter.report(Progress::new(f64::from(i)));
        }
        reporter.report(Progress::new(f64::NAN));
        reporter.report(Progress::new(1.0).with_total(-1.0));
        reporter.summary("é".repeat(1000));
        let update = reports.take();
        assert_eq!(update.progress, Some(Progress::new(9999.0)));
        let summary = update.summary.unwrap_or_default();
        assert!(summary.len() <= MAX_SUMMARY_BYTES && summary.ends_with('…'));
        assert!(reports.take().is_empty());
        reporter.report(Progress::new(1.0).with_message("m".repeat(5000)));
        let message = reports.take().progress.and_then(|p| p.message);
        assert_eq!(message.map(|m| m.len()), Some(MAX_MESSAGE_BYTES));
    }

    #[tokio::test]
    async fn next_waits_the_interval_between_updates() {
        let (reporter, mut reports) = Reporter::channel();
        reporter.report(Progress::new(1.0));
        let first = Instant::now();
        assert_eq!(reports.next().await.progress, Some(Progress::new(1.0)));
        reporter.report(Progress::new(2.0));
        reporter.report(Progress::new(3.0));
        assert_eq!(reports.next().await.progress, Some(Progress::new(3.0)));
        assert!(first.elapsed() >= REPORT_INTERVAL);
        let waiting = tokio::spawn(async move { reports.next().await });
        tokio::time::sleep(REPORT_INTERVAL * 2).await;
        assert!(!waiting.is_finished());
        reporter.summary("late");
        let update = waiting.await.unwrap_or_default();
        assert_eq!(update.summary.as_deref(), Some("late"));
    }

    #[tokio::test]
    async fn current_is_the_scoped_reporter() {
        let (reporter, mut reports) = Reporter::channel();
        reporter
            .scope(async { Reporter::current().summary("inside") })
            .await;
        assert_eq!(reports.take().summary.as_deref(), Some("inside"));
    }
}
