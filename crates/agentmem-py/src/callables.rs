//! Python callables in the engine's seams: a summarizer, an embedder and a
//! reranker written in Python (a LiteLLM call, an OpenAI client, a local
//! model). The engine calls them from whatever thread runs it, with the
//! interpreter released; each call attaches to the interpreter for its
//! duration. A callable that raises, or answers in the wrong shape, fails as
//! the engine's own typed error for that seam, so the engine writes nothing
//! of what it was doing; the Python exception is kept to become the
//! `__cause__` of the exception the caller sees.

use std::sync::{Arc, Mutex, PoisonError};
use std::thread::ThreadId;

use agentmem::{
    Embedder, Error as EngineError, Event, Reranker, SummarizeError, Summarizer, Summary,
    SummaryRequest,
};
use pyo3::prelude::*;
use pyo3::types::{PyDict, PyList, PyString};
use serde_json::Value;

use crate::errors::Seam;
use crate::json;

/// The last exception a seam's callable raised on each thread: a call
/// that failed inline takes it back on its own thread, so a cause is never
/// another thread's, and the store's background embedder failing meanwhile
/// (on a thread of its own) takes none away. One is kept per thread that
/// called the callable, the latest.
#[derive(Debug, Default)]
pub(crate) struct RaisedSlot(Mutex<Vec<(ThreadId, PyErr)>>);

impl RaisedSlot {
    fn keep(&self, error: PyErr) {
        let thread = std::thread::current().id();
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        kept.retain(|(other, _)| *other != thread);
        kept.push((thread, error));
    }

    /// The exception this thread's call raised, taken out.
    pub(crate) fn take(&self) -> Option<PyErr> {
        let thread = std::thread::current().id();
        let mut kept = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        let at = kept.iter().position(|(other, _)| *other == thread)?;
        Some(kept.swap_remove(at).1)
    }
}

/// The callables a store was given, each with the slot for what it raised.
#[derive(Debug, Default, Clone)]
pub(crate) struct Callables {
    pub(crate) summarizer: Option<Arc<PySummarizer>>,
    pub(crate) embedder: Option<Arc<PyEmbedder>>,
    pub(crate) reranker: Option<Arc<PyReranker>>,
}

impl Callables {
    /// The exception the callable of `seam` raised last, if it did.
    pub(crate) fn raised(&self, seam: Seam) -> Option<PyErr> {
        match seam {
            Seam::Summarizer => self.summarizer.as_ref().and_then(|s| s.raised.take()),
            Seam::Embedder => self.embedder.as_ref().and_then(|e| e.raised.take()),
            Seam::Reranker => self.reranker.as_ref().and_then(|r| r.raised.take()),
        }
    }
}

/// What a callable answered, described for an error message.
fn describe(error: &PyErr, py: Python<'_>) -> String {
    let kind = error
        .get_type(py)
        .name()
        .map(|name| name.to_string())
        .unwrap_or_else(|_| "an exception".to_owned());
    format!("{kind}: {}", error.value(py))
}

/// Calls into Python for `who` (the Python summarizer, …): `call`'s
/// exception is kept in `raised` and described in the error; its own
/// `Err` says the answer had the wrong shape.
fn call_python<T>(
    who: &str,
    raised: &RaisedSlot,
    call: impl FnOnce(Python<'_>) -> PyResult<Result<T, String>>,
) -> Result<T, String> {
    Python::attach(|py| {
        call(py).unwrap_or_else(|error| {
            let text = describe(&error, py);
            raised.keep(error);
            Err(format!("{who} raised {text}"))
        })
    })
}

/// `summarizer(request: dict) -> str | dict`: the request is
/// `{"events": [event, …], "focus": str | None, "max_tokens": int}`; the
/// answer is markdown with `## <section>` headings and `- ` bullets (the
/// nine sections of agentmem's summaries; prose goes under "Critical
/// context"), or `{"sections": {title: [bullet, …]}, "facts": [...]}`.
#[derive(Debug)]
pub(crate) struct PySummarizer {
    function: Py<PyAny>,
    name: String,
    window_tokens: u64,
    raised: RaisedSlot,
}

impl PySummarizer {
    pub(crate) fn new(function: Py<PyAny>, name: String, window_tokens: u64) -> PySummarizer {
        PySummarizer {
            function,
            name,
            window_tokens,
            raised: RaisedSlot::default(),
        }
    }

    fn call(&self, request: &SummaryRequest<'_>) -> Result<Summary, String> {
        let arguments = serde_json::json!({
            "events": request.events,
            "focus": request.focus,
            "max_tokens": request.max_tokens,
        });
        let answer = call_python("the Python summarizer", &self.raised, |py| {
            let request = json::to_python(py, &arguments)?;
            let answer = self.function.bind(py).call1((request,))?;
            if let Ok(text) = answer.cast::<PyString>() {
                return Ok(Ok(Value::String(text.to_str()?.to_owned())));
            }
            if answer.cast::<PyDict>().is_ok() {
                return json::from_python(py, &answer, "the Python summarizer's answer").map(Ok);
            }
            Ok(Err(format!(
                "the Python summarizer returned {}; return the summary as markdown (str) or as {{\"sections\": {{title: [bullets]}}, \"facts\": [...]}} (dict)",
                answer.get_type().name()?
            )))
        })?;
        Ok(match answer {
            Value::String(text) => summary_from_text(&text, request.events),
            other => agentmem_llm::summarizer::summary_from_json(&other, request.events),
        })
    }
}

/// The summary in a markdown answer; prose without agentmem's headings is
/// kept whole under "Critical context", a bullet a line.
fn summary_from_text(text: &str, span: &[Event]) -> Summary {
    let mut summary = Summary::parse_rendered(text).unwrap_or_else(|| {
        let mut summary = Summary::empty();
        if let Some(critical) = summary.section_mut(CRITICAL_CONTEXT) {
            critical.extend(
                text.lines()
                    .map(|line| line.trim().trim_start_matches("- ").to_owned())
                    .filter(|line| !line.is_empty()),
            );
        }
        summary
    });
    summary.covered_event_ids = span.iter().map(|e| e.id.clone()).collect();
    summary
}

/// The section prose answers go to.
const CRITICAL_CONTEXT: &str = "Critical context";

impl Summarizer for PySummarizer {
    fn name(&self) -> &str {
        &self.name
    }

    fn version(&self) -> &str {
        "python"
    }

    fn window_tokens(&self) -> u64 {
        self.window_tokens
    }

    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        if request.events.is_empty() {
            return Err(SummarizeError::Empty);
        }
        let mut summary = self.call(request).map_err(SummarizeError::Failed)?;
        summary.trim_to(request.max_tokens, request.tokenizer)?;
        Ok(summary)
    }
}

/// A summarizer the store's sessions share.
pub(crate) struct SharedSummarizer(pub(crate) Arc<PySummarizer>);

impl Summarizer for SharedSummarizer {
    fn name(&self) -> &str {
        self.0.name()
    }

    fn version(&self) -> &str {
        self.0.version()
    }

    fn window_tokens(&self) -> u64 {
        self.0.window_tokens()
    }

    fn summarize(&self, request: &SummaryRequest<'_>) -> Result<Summary, SummarizeError> {
        self.0.summarize(request)
    }
}

/// `embedder(texts: list[str]) -> list[list[float]]`: one vector per text,
/// all of one length.
#[derive(Debug)]
pub(crate) struct PyEmbedder {
    function: Py<PyAny>,
    model: String,
    raised: RaisedSlot,
}

impl PyEmbedder {
    pub(crate) fn new(function: Py<PyAny>, model: String) -> PyEmbedder {
        PyEmbedder {
            function,
            model,
            raised: RaisedSlot::default(),
        }
    }

    fn failure(&self, message: String) -> EngineError {
        EngineError::Embedder {
            model: self.model.clone(),
            message,
        }
    }
}

impl Embedder for PyEmbedder {
    fn model(&self) -> &str {
        &self.model
    }

    fn embed(&self, texts: &[&str]) -> agentmem::Result<Vec<Vec<f32>>> {
        let vectors = call_python("the Python embedder", &self.raised, |py| {
            let answer = self.function.bind(py).call1((PyList::new(py, texts)?,))?;
            Ok(answer.extract::<Vec<Vec<f32>>>().map_err(|_| {
                "the Python embedder must return a list of vectors (list[list[float]]), one per text".to_owned()
            }))
        })
        .map_err(|message| self.failure(message))?;
        if vectors.len() != texts.len() {
            return Err(self.failure(format!(
                "the Python embedder returned {} vectors for {} texts; return one per text, in order",
                vectors.len(),
                texts.len()
            )));
        }
        if let Some(first) = vectors.first() {
            if first.is_empty() || vectors.iter().any(|v| v.len() != first.len()) {
                return Err(self.failure(
                    "the Python embedder's vectors must all have one length, above 0".to_owned(),
                ));
            }
        }
        Ok(vectors)
    }
}

/// `reranker(query: str, passages: list[str]) -> list[float]`: a relevance
/// score per passage, higher for those that answer the query better.
#[derive(Debug)]
pub(crate) struct PyReranker {
    function: Py<PyAny>,
    model: String,
    raised: RaisedSlot,
}

impl PyReranker {
    pub(crate) fn new(function: Py<PyAny>, model: String) -> PyReranker {
        PyReranker {
            function,
            model,
            raised: RaisedSlot::default(),
        }
    }

    fn failure(&self, message: String) -> EngineError {
        EngineError::Reranker {
            model: self.model.clone(),
            message,
        }
    }
}

impl Reranker for PyReranker {
    fn model(&self) -> &str {
        &self.model
    }

    fn rerank(&self, query: &str, candidates: &[&str]) -> agentmem::Result<Vec<usize>> {
        let scores = call_python("the Python reranker", &self.raised, |py| {
            let answer = self
                .function
                .bind(py)
                .call1((query, PyList::new(py, candidates)?))?;
            Ok(answer.extract::<Vec<f64>>().map_err(|_| {
                "the Python reranker must return a list of scores (list[float]), one per passage"
                    .to_owned()
            }))
        })
        .map_err(|message| self.failure(message))?;
        if scores.len() != candidates.len() || scores.iter().any(|s| s.is_nan()) {
            return Err(self.failure(format!(
                "the Python reranker returned {} scores for {} passages; return one number (not NaN) per passage, in order",
                scores.len(),
                candidates.len()
            )));
        }
        let mut order: Vec<usize> = (0..scores.len()).collect();
        order.sort_by(|a, b| scores[*b].total_cmp(&scores[*a]).then(a.cmp(b)));
        Ok(order)
    }
}
