//! Progress of long operations (replay, eval, the first recall that embeds
//! a history, import) on stderr, drawn only when stderr is a terminal: piped
//! or captured, a command prints its results and nothing else.

use std::io::IsTerminal;
use std::sync::Arc;

use agentmem::Embedder;
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};

/// A bar of `total` steps, labelled `label` (`replaying turns`), cleared
/// when finished. Print lines through [`ProgressBar::suspend`] while it shows.
pub fn bar(total: u64, label: &str) -> ProgressBar {
    let target = if std::io::stderr().is_terminal() {
        ProgressDrawTarget::stderr()
    } else {
        ProgressDrawTarget::hidden()
    };
    let bar = ProgressBar::with_draw_target(Some(total), target);
    bar.set_style(
        ProgressStyle::with_template("{msg} {bar:40} {pos}/{len} ({eta} left)")
            .expect("the template is valid"),
    );
    bar.set_message(label.to_owned());
    bar
}

/// An embedder that advances `bar` by the texts it embeds.
pub struct EmbeddingShown {
    inner: Arc<dyn Embedder + Send + Sync>,
    bar: ProgressBar,
}

impl EmbeddingShown {
    /// `inner`, with the texts it embeds counted on `bar`.
    pub fn new(inner: Arc<dyn Embedder + Send + Sync>, bar: ProgressBar) -> EmbeddingShown {
        EmbeddingShown { inner, bar }
    }
}

impl Embedder for EmbeddingShown {
    fn model(&self) -> &str {
        self.inner.model()
    }

    fn embed(&self, texts: &[&str]) -> agentmem::Result<Vec<Vec<f32>>> {
        let vectors = self.inner.embed(texts)?;
        self.bar.inc(texts.len() as u64);
        Ok(vectors)
    }
}
