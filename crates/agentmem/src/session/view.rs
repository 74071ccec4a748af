//! The model's view of a session: the compaction snapshot's base, then the
//! active log, as a transcript counted in one encoding, with the segments
//! of its latest render kept for the next.

use std::sync::Arc;

use crate::base::event::Event;
use crate::files::snapshot::Snapshot;
use crate::pipeline::guard::GuardPolicy;
use crate::pipeline::segments::RenderCache;
use crate::pipeline::transcript::Transcript;
use crate::tokens::Encoding;

/// The snapshot, the transcript built on it and the render cache. The
/// active log's events are the log's: every method that builds the
/// transcript is handed them.
#[derive(Debug)]
pub(crate) struct ModelView {
    /// How tool outputs are cut in the view.
    guard: GuardPolicy,
    snapshot: Option<Snapshot>,
    /// Built on first use, in the encoding last asked for.
    transcript: Option<Transcript>,
    /// The latest view's rendered segments, reused while their items stay.
    renders: RenderCache,
}

/// What a compaction from the raw log sets aside while it works on the
/// whole history, put back when it is not applied.
#[derive(Debug)]
pub(crate) struct SetAside {
    snapshot: Option<Snapshot>,
    transcript: Option<Transcript>,
}

impl ModelView {
    /// The view of a session compacted into `snapshot` (if ever), its
    /// transcript not built yet.
    pub(crate) fn new(snapshot: Option<Snapshot>, guard: GuardPolicy) -> ModelView {
        ModelView {
            guard,
            snapshot,
            transcript: None,
            renders: RenderCache::default(),
        }
    }

    /// The compaction snapshot, if the session was ever compacted.
    pub(crate) fn snapshot(&self) -> Option<&Snapshot> {
        self.snapshot.as_ref()
    }

    /// Replaces the snapshot once a compaction committed a new one.
    pub(crate) fn set_snapshot(&mut self, snapshot: Snapshot) {
        self.snapshot = Some(snapshot);
    }

    /// The view before any shaping: the snapshot base, then `active`.
    pub(crate) fn events(&self, active: &[Arc<Event>]) -> Vec<Event> {
        let base = self.snapshot.iter().flat_map(|s| s.base.iter());
        base.chain(active.iter().map(|e| &**e)).cloned().collect()
    }

    /// The transcript as built last, to change, if it was.
    pub(crate) fn built_mut(&mut self) -> Option<&mut Transcript> {
        self.transcript.as_mut()
    }

    /// The encoding the transcript was last built in.
    pub(crate) fn encoding(&self) -> Option<Encoding> {
        self.transcript.as_ref().map(Transcript::encoding)
    }

    /// The transcript in `encoding`, built from `active` when there is
    /// none in it yet; events appended since the last check maybe not
    /// counted yet (see [`Transcript::extend_counting_later`]).
    pub(crate) fn in_encoding(
        &mut self,
        encoding: Encoding,
        active: &[Arc<Event>],
    ) -> &mut Transcript {
        let stale = self
            .transcript
            .as_ref()
            .is_none_or(|t| t.encoding() != encoding);
        if stale {
            self.transcript = Some(self.build(encoding, active));
        }
        self.transcript.as_mut().expect("just built")
    }

    /// The transcript in `encoding`, every event in it counted.
    pub(crate) fn counted_in(
        &mut self,
        encoding: Encoding,
        active: &[Arc<Event>],
    ) -> &mut Transcript {
        let transcript = self.in_encoding(encoding, active);
        transcript.count_now();
        transcript
    }

    /// The view counted from scratch: snapshot base, the raw tail left by the
    /// last compaction (its usage measured the old context, so it anchors
    /// nothing), then everything after.
    fn build(&self, encoding: Encoding, active: &[Arc<Event>]) -> Transcript {
        let mut transcript = Transcript::new(encoding, self.guard.clone());
        let tail = self
            .snapshot
            .as_ref()
            .map_or(0, |s| s.tail_events.min(active.len()));
        if let Some(snapshot) = &self.snapshot {
            transcript.extend(&snapshot.base);
            transcript.extend(&active[..tail]);
            transcript.forget_anchor();
        }
        transcript.extend(&active[tail..]);
        transcript
    }

    /// Adds events just appended to the log, counted when a check needs
    /// them; a transcript not built yet takes them when it is.
    pub(crate) fn extend(&mut self, appended: &[Arc<Event>]) {
        if let Some(transcript) = &mut self.transcript {
            transcript.extend_counting_later(appended);
        }
    }

    /// Replaces the transcript by the one a compaction left.
    pub(crate) fn set_transcript(&mut self, transcript: Transcript) {
        self.transcript = Some(transcript);
    }

    /// The transcript (built, see [`ModelView::in_encoding`]) to render,
    /// and the cache of what was rendered last.
    pub(crate) fn rendering(&mut self) -> (&Transcript, &mut RenderCache) {
        let transcript = self.transcript.as_ref().expect("built before rendering");
        (transcript, &mut self.renders)
    }

    /// Sets the snapshot and the transcript aside for a view from `base`
    /// (see [`SetAside`]).
    pub(crate) fn set_aside(&mut self, base: Snapshot) -> SetAside {
        SetAside {
            snapshot: self.snapshot.replace(base),
            transcript: self.transcript.take(),
        }
    }

    /// Puts back what [`ModelView::set_aside`] took.
    pub(crate) fn put_back(&mut self, set_aside: SetAside) {
        self.snapshot = set_aside.snapshot;
        self.transcript = set_aside.transcript;
    }
}

#[cfg(test)]
#[path = "view_tests.rs"]
mod tests;
