//! Evidence recall on LoCoMo, the long-conversation memory benchmark, and
//! on any dataset in its format (LongMemEval is converted to it).
//!
//! Each conversation is ingested once as an agent's sessions, in order,
//! with their dates. Then, for every question of categories 1–4 and every
//! budget, the memory context for that question is built under the budget,
//! and the question counts as recalled when the text of every evidence turn
//! is in it. Two baselines get the same budget: the most recent turns that
//! fit (trimming), and plain BM25 over the turns (whole turns in BM25's
//! order, packed apart from recall: see [`plain_bm25`]). Scores are given by
//! category and, for files whose questions carry one, by their original
//! `question_type`.

use std::collections::{BTreeMap, HashMap};
use std::path::Path;
use std::sync::Arc;

use agentmem::memory::recall;
use agentmem::redact::RedactionPolicy;
use agentmem::storage::search::SearchIndex;
use agentmem::tokens::Tokenizer;
use agentmem::{
    AgentId, Durability, Embedder, Event, RecallRequest, Recalled, Reranker, SessionId, Storage,
    Store,
};
use anyhow::{anyhow, Context as _, Result};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use plain_bm25::plain_bm25;

/// The categories scored: multi-hop, temporal, open-domain, single-hop
/// (category 5, adversarial, has no evidence to recall).
pub const SCORED_CATEGORIES: [u8; 4] = [1, 2, 3, 4];

/// One conversation of the dataset.
#[derive(Debug, Clone, PartialEq)]
pub struct Conversation {
    pub sample_id: String,
    pub sessions: Vec<DatedSession>,
    pub questions: Vec<Question>,
}

/// One session of a conversation: its start time and its turns.
#[derive(Debug, Clone, PartialEq)]
pub struct DatedSession {
    pub number: u32,
    /// Epoch seconds.
    pub ts: f64,
    pub turns: Vec<Turn>,
}

/// One dialogue turn.
#[derive(Debug, Clone, PartialEq)]
pub struct Turn {
    /// e.g. `D1:3`.
    pub dia_id: String,
    pub speaker: String,
    pub text: String,
    /// The caption of a shared image, when there is one.
    pub image_caption: Option<String>,
}

/// One question with the turns that hold its answer.
#[derive(Debug, Clone, PartialEq)]
pub struct Question {
    pub question: String,
    pub category: u8,
    /// The dataset's own type of question (LongMemEval's `question_type`).
    pub question_type: Option<String>,
    /// When the question is asked (epoch seconds), for files that say
    /// (LongMemEval's `question_date`): relative dates count from it.
    pub asked_at: Option<f64>,
    /// Evidence ids, repaired (`D:11:26` → `D11:26`, `D30:05` → `D30:5`).
    pub evidence: Vec<String>,
}

/// Recall of one method, overall and by category.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct MethodScore {
    pub recalled: usize,
    pub questions: usize,
    pub recall: f64,
    pub by_category: BTreeMap<u8, CategoryScore>,
    /// By the dataset's own type of question, when its questions carry one.
    #[serde(skip_serializing_if = "BTreeMap::is_empty")]
    pub by_type: BTreeMap<String, CategoryScore>,
    /// Mean tokens of the contexts built.
    pub mean_tokens: f64,
    /// Evidence turns of the questions scored.
    pub evidence_turns: usize,
    /// Of those, the turns whose passage that best matches the question
    /// (recall's own choice, the whole turn when it is short) is in the context.
    pub passages_shown: usize,
    /// `passages_shown / evidence_turns`: evidence found by its matching
    /// part, where `recall` asks for every evidence turn whole.
    pub passage_recall: f64,
}

/// Recall within one category.
#[derive(Debug, Clone, PartialEq, Default, Serialize)]
pub struct CategoryScore {
    pub recalled: usize,
    pub questions: usize,
    pub recall: f64,
}

/// The whole run.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct LocomoReport {
    /// The file the conversations came from.
    pub dataset: String,
    pub budget_tokens: u64,
    /// The embedding model whose vectors joined agentmem's score (the
    /// baselines never use one); `None`: agentmem on BM25 and its other
    /// lexical signals alone.
    pub embedder: Option<String>,
    /// The model that read agentmem's best candidates, if one did.
    pub reranker: Option<String>,
    pub conversations: usize,
    /// Questions scored (categories 1–4 with at least one evidence turn found).
    pub questions: usize,
    /// Questions left out: no evidence id names a turn of the conversation.
    pub skipped_questions: usize,
    /// Evidence ids that name no turn (after repair), ignored.
    pub unknown_evidence: usize,
    pub agentmem: MethodScore,
    pub trimming: MethodScore,
    pub bm25: MethodScore,
    /// The questions agentmem's context missed, with the evidence it left out.
    pub misses: Vec<Miss>,
}

/// A question whose evidence the memory context did not hold entirely.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct Miss {
    pub sample_id: String,
    pub category: u8,
    pub question: String,
    /// Evidence ids whose text was not in the context.
    pub missing: Vec<String>,
}

/// Reads a LoCoMo file: a JSON array of samples (or one sample).
pub fn read(path: &Path) -> Result<Vec<Conversation>> {
    let text = std::fs::read_to_string(path).with_context(|| format!("read {}", path.display()))?;
    let bad = |message: String| anyhow!("cannot read {} as LoCoMo: {message}", path.display());
    let value: Value = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let samples = match value {
        Value::Array(samples) => samples,
        sample @ Value::Object(_) => vec![sample],
        _ => return Err(bad("expected an array of samples".into())),
    };
    samples
        .iter()
        .enumerate()
        .map(|(i, sample)| parse_sample(i, sample).map_err(bad))
        .collect()
}

#[derive(Deserialize)]
struct RawTurn {
    speaker: String,
    dia_id: String,
    #[serde(default)]
    text: String,
    #[serde(default)]
    blip_caption: Option<String>,
}

#[derive(Deserialize)]
struct RawQuestion {
    question: String,
    #[serde(default)]
    category: Value,
    #[serde(default)]
    question_type: Option<String>,
    #[serde(default)]
    question_date: Option<String>,
    #[serde(default)]
    evidence: Vec<Value>,
}

fn parse_sample(index: usize, sample: &Value) -> std::result::Result<Conversation, String> {
    let sample_id = sample
        .get("sample_id")
        .and_then(Value::as_str)
        .map_or_else(|| format!("conv-{}", index + 1), str::to_owned);
    let conversation = sample
        .get("conversation")
        .and_then(Value::as_object)
        .ok_or_else(|| format!("sample {sample_id} has no \"conversation\" object"))?;
    let mut sessions = Vec::new();
    let mut last_ts = 0.0;
    for number in 1.. {
        let Some(turns) = conversation.get(&format!("session_{number}")) else {
            break;
        };
        let turns: Vec<RawTurn> = serde_json::from_value(turns.clone())
            .map_err(|e| format!("sample {sample_id}, session_{number}: {e}"))?;
        let ts = conversation
            .get(&format!("session_{number}_date_time"))
            .and_then(Value::as_str)
            .and_then(parse_session_date)
            .unwrap_or(last_ts + 86_400.0);
        last_ts = ts;
        sessions.push(DatedSession {
            number,
            ts,
            turns: turns
                .into_iter()
                .map(|t| Turn {
                    dia_id: t.dia_id,
                    speaker: t.speaker,
                    text: t.text,
                    image_caption: t.blip_caption,
                })
                .collect(),
        });
    }
    let questions: Vec<RawQuestion> = sample
        .get("qa")
        .map(|qa| serde_json::from_value(qa.clone()))
        .transpose()
        .map_err(|e| format!("sample {sample_id}, qa: {e}"))?
        .unwrap_or_default();
    let questions = questions
        .into_iter()
        .map(|q| Question {
            question: q.question,
            question_type: q.question_type,
            asked_at: q.question_date.as_deref().and_then(parse_session_date),
            category: q
                .category
                .as_u64()
                .or_else(|| q.category.as_str()?.parse().ok())
                .unwrap_or(0) as u8,
            evidence: q
                .evidence
                .iter()
                .filter_map(Value::as_str)
                .flat_map(repair_evidence)
                .collect(),
        })
        .collect();
    Ok(Conversation {
        sample_id,
        sessions,
        questions,
    })
}

/// A session's date as epoch seconds (UTC): LoCoMo's `1:56 pm on 8 May,
/// 2023` or LongMemEval's `2023/05/20 (Sat) 02:21`.
fn parse_session_date(text: &str) -> Option<f64> {
    let locomo = time::macros::format_description!(
        "[hour repr:12 padding:none]:[minute] [period case_sensitive:false] on [day padding:none] [month repr:long case_sensitive:false], [year]"
    );
    let longmemeval = time::macros::format_description!(
        "[year]/[month]/[day] ([weekday repr:short]) [hour]:[minute]"
    );
    let text = text.trim();
    let parsed = time::PrimitiveDateTime::parse(text, &locomo)
        .or_else(|_| time::PrimitiveDateTime::parse(text, &longmemeval))
        .ok()?;
    Some(parsed.assume_utc().unix_timestamp() as f64)
}

/// The dataset's evidence ids, repaired: several in one string (`D8:6; D9:17`),
/// a stray colon (`D:11:26`), leading zeros (`D30:05`).
fn repair_evidence(raw: &str) -> Vec<String> {
    raw.split([';', ',', ' '])
        .filter_map(|part| {
            let digits: Vec<u32> = part
                .split(|c: char| !c.is_ascii_digit())
                .filter(|d| !d.is_empty())
                .filter_map(|d| d.parse().ok())
                .collect();
            match digits[..] {
                [session, turn] if part.trim_start().starts_with('D') => {
                    Some(format!("D{session}:{turn}"))
                }
                _ => None,
            }
        })
        .collect()
}

/// Runs the evaluation of `dataset`'s `conversations` at each of
/// `budgets`, one report a budget, in a temporary store under `scratch`
/// (removed afterwards), or in `database` as an agent of its own (its
/// sessions deleted afterwards): each conversation is ingested once and asked every
/// question at every budget. With an `embedder`, agentmem's recall adds its
/// vector score, and with a `reranker` a model reads its best candidates;
/// the baselines stay as they are. `on_question` is called as each of the
/// [`questions_to_score`] is done at a budget (scored, or skipped for want
/// of evidence).
#[allow(clippy::too_many_arguments)]
pub fn evaluate(
    dataset: &str,
    conversations: &[Conversation],
    budgets: &[u64],
    scratch: &Path,
    database: Option<&Arc<dyn Storage>>,
    tokenizer: Tokenizer,
    embedder: Option<&dyn Embedder>,
    reranker: Option<&dyn Reranker>,
    on_question: &mut dyn FnMut(),
) -> Result<Vec<LocomoReport>> {
    let mut reports: Vec<LocomoReport> = budgets
        .iter()
        .map(|&budget_tokens| LocomoReport {
            dataset: dataset.to_owned(),
            budget_tokens,
            embedder: embedder.map(|e| e.model().to_owned()),
            reranker: reranker.map(|r| r.model().to_owned()),
            conversations: conversations.len(),
            questions: 0,
            skipped_questions: 0,
            unknown_evidence: 0,
            agentmem: MethodScore::default(),
            trimming: MethodScore::default(),
            bm25: MethodScore::default(),
            misses: Vec::new(),
        })
        .collect();
    for conversation in conversations {
        let dir = tempfile::Builder::new()
            .prefix(&format!(".locomo-{}-", sanitize(&conversation.sample_id)))
            .tempdir_in(scratch)
            .with_context(|| format!("create a scratch folder in {}", scratch.display()))?;
        let store = Store::open(dir.path(), Durability::Os)?;
        let (agent, turns, index): (_, _, Box<dyn SearchIndex>) = match database {
            None => {
                let agent = AgentId::new(sanitize(&conversation.sample_id))?;
                let turns = ingest(conversation, &|id| store.create_session(&agent, Some(id)))?;
                let mut index = store.history_index(&agent)?;
                recall::refresh_memories(&mut index, &store.agent_dir(&agent))?;
                (agent, turns, Box::new(index))
            }
            Some(storage) => {
                let agent = AgentId::new(format!(
                    "{}-{}",
                    sanitize(&conversation.sample_id),
                    SessionId::generate()
                ))?;
                let turns = ingest(conversation, &|id| {
                    store.create_session_in(storage, &agent, Some(id))
                })?;
                let index = storage.search_index(&agent)?;
                (agent, turns, index)
            }
        };
        // Recall scores the vectors there are: every turn is embedded
        // before the first question, as a history long in use would be.
        if let Some(embedder) = embedder {
            index.embed_missing(embedder)?;
        }
        let asked = Asked {
            conversation,
            turns: &turns,
            index: &*index,
            tokenizer,
            embedder,
            reranker,
        };
        let scored = reports
            .iter_mut()
            .try_for_each(|report| asked.score_at(report, on_question));
        if let Some(storage) = database {
            remove_agent(&**storage, &agent)?;
        }
        scored?;
    }
    for report in &mut reports {
        for score in [&mut report.agentmem, &mut report.trimming, &mut report.bm25] {
            finish(score);
        }
    }
    Ok(reports)
}

/// Deletes what an evaluation left of `agent` in a database: its sessions,
/// then (catching its index up) their indexed events.
fn remove_agent(storage: &dyn Storage, agent: &AgentId) -> Result<()> {
    for meta in storage.list_sessions(agent)? {
        storage.delete_session(agent, &SessionId::new(&meta.id)?)?;
    }
    storage.search_index(agent)?;
    Ok(())
}

/// One ingested conversation, ready for its questions.
struct Asked<'a> {
    conversation: &'a Conversation,
    /// Each turn's text by dia id.
    turns: &'a HashMap<&'a str, &'a str>,
    index: &'a dyn SearchIndex,
    tokenizer: Tokenizer,
    embedder: Option<&'a dyn Embedder>,
    reranker: Option<&'a dyn Reranker>,
}

impl Asked<'_> {
    /// Asks every scored question under the report's budget and tallies
    /// agentmem and the two baselines into `report`.
    fn score_at(&self, report: &mut LocomoReport, on_question: &mut dyn FnMut()) -> Result<()> {
        let (conversation, turns) = (self.conversation, self.turns);
        let budget_tokens = report.budget_tokens;
        let trimmed = trimming_block(conversation, budget_tokens, self.tokenizer);
        for question in scored(conversation) {
            on_question();
            let (known, unknown): (Vec<&String>, Vec<&String>) = question
                .evidence
                .iter()
                .partition(|id| turns.contains_key(id.as_str()));
            report.unknown_evidence += unknown.len();
            if known.is_empty() {
                report.skipped_questions += 1;
                continue;
            }
            report.questions += 1;
            let evidence: Vec<&str> = known.iter().map(|id| turns[id.as_str()]).collect();
            let passages = evidence
                .iter()
                .map(|text| recall::matching_passage(text, &question.question))
                .collect::<agentmem::Result<Vec<String>>>()?;
            let evidence = Evidence {
                turns: &evidence,
                passages: &passages,
            };
            let mut request = RecallRequest::new(&question.question, budget_tokens);
            request.asked_at = question.asked_at;
            let redaction = RedactionPolicy::default();
            let (index, tokenizer) = (self.index, self.tokenizer);
            let ours = recall::recall(
                index,
                &request,
                tokenizer,
                self.embedder,
                self.reranker,
                redaction,
            )?;
            let plain = plain_bm25(index, &question.question, budget_tokens, tokenizer)?;
            let block = normalize(&ours.block);
            let missing: Vec<String> = known
                .iter()
                .filter(|id| !block.contains(&normalize(turns[id.as_str()])))
                .map(|id| id.to_string())
                .collect();
            if !missing.is_empty() {
                report.misses.push(Miss {
                    sample_id: conversation.sample_id.clone(),
                    category: question.category,
                    question: question.question.clone(),
                    missing,
                });
            }
            tally(&mut report.agentmem, question, &ours, &evidence);
            tally(&mut report.bm25, question, &plain, &evidence);
            tally(&mut report.trimming, question, &trimmed, &evidence);
        }
        Ok(())
    }
}

/// How many questions of `conversations` an evaluation goes through: those
/// of [`SCORED_CATEGORIES`].
pub fn questions_to_score(conversations: &[Conversation]) -> usize {
    conversations.iter().map(|c| scored(c).count()).sum()
}

fn scored(conversation: &Conversation) -> impl Iterator<Item = &Question> {
    conversation
        .questions
        .iter()
        .filter(|q| SCORED_CATEGORIES.contains(&q.category))
}

/// Ingests the conversation's sessions in order, each into the session
/// `create` makes for its id (`session_<n>`); returns each turn's text by dia id.
pub(crate) fn ingest<'a>(
    conversation: &'a Conversation,
    create: &dyn Fn(SessionId) -> agentmem::Result<agentmem::Session>,
) -> Result<HashMap<&'a str, &'a str>> {
    let first_speaker = conversation
        .sessions
        .iter()
        .flat_map(|s| s.turns.first())
        .map(|t| t.speaker.clone())
        .next()
        .unwrap_or_default();
    let mut turns = HashMap::new();
    for session in &conversation.sessions {
        let id = SessionId::new(format!("session_{}", session.number))?;
        let mut log = create(id)?;
        let events = session
            .turns
            .iter()
            .enumerate()
            .map(|(i, turn)| {
                turns.insert(turn.dia_id.as_str(), turn.text.as_str());
                turn_event(turn, session.ts + i as f64, turn.speaker == first_speaker)
            })
            .collect();
        log.ingest(events)?;
        log.close()?;
    }
    Ok(turns)
}

fn turn_event(turn: &Turn, ts: f64, is_user: bool) -> Event {
    let content = match &turn.image_caption {
        Some(caption) => format!("{} [shares an image: {caption}]", turn.text),
        None => turn.text.clone(),
    };
    let mut event = if is_user {
        Event::user(content)
    } else {
        Event::assistant(content)
    };
    event.id = turn.dia_id.clone();
    event.ts = ts;
    event
        .extra
        .insert("name", Value::String(turn.speaker.clone()));
    event
}

/// The trimming baseline: the most recent turns that fit the budget.
fn trimming_block(conversation: &Conversation, budget: u64, tokenizer: Tokenizer) -> Recalled {
    let mut lines = Vec::new();
    let mut used = 0u64;
    'sessions: for session in conversation.sessions.iter().rev() {
        for turn in session.turns.iter().rev() {
            let line = format!("{}: {}", turn.speaker, normalize(&turn.text));
            let cost = tokenizer.count(&line) as u64 + 1;
            if used + cost > budget {
                break 'sessions;
            }
            used += cost;
            lines.push(line);
        }
    }
    lines.reverse();
    Recalled {
        items: Vec::new(),
        considered: lines.len(),
        tokens: used,
        block: lines.join("\n"),
        embedding: None,
    }
}

/// A question's evidence turns, and the passage of each that best matches it.
struct Evidence<'a> {
    turns: &'a [&'a str],
    passages: &'a [String],
}

fn tally(score: &mut MethodScore, question: &Question, context: &Recalled, evidence: &Evidence) {
    let block = normalize(&context.block);
    let hit = evidence
        .turns
        .iter()
        .all(|text| block.contains(&normalize(text)));
    score.evidence_turns += evidence.passages.len();
    score.passages_shown += evidence
        .passages
        .iter()
        .filter(|passage| block.contains(&normalize(passage)))
        .count();
    score.questions += 1;
    score.recalled += usize::from(hit);
    score.mean_tokens += context.tokens as f64;
    let category = score.by_category.entry(question.category).or_default();
    category.questions += 1;
    category.recalled += usize::from(hit);
    if let Some(kind) = &question.question_type {
        let kind = score.by_type.entry(kind.clone()).or_default();
        kind.questions += 1;
        kind.recalled += usize::from(hit);
    }
}

fn finish(score: &mut MethodScore) {
    let ratio = |a: usize, b: usize| if b == 0 { 0.0 } else { a as f64 / b as f64 };
    score.recall = ratio(score.recalled, score.questions);
    score.passage_recall = ratio(score.passages_shown, score.evidence_turns);
    score.mean_tokens = if score.questions == 0 {
        0.0
    } else {
        score.mean_tokens / score.questions as f64
    };
    for group in score
        .by_category
        .values_mut()
        .chain(score.by_type.values_mut())
    {
        group.recall = ratio(group.recalled, group.questions);
    }
}

fn normalize(text: &str) -> String {
    text.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// `id` with every character but ASCII letters and digits as `-`: a valid agent or session id.
pub(crate) fn sanitize(id: &str) -> String {
    id.chars()
        .map(|c| if c.is_ascii_alphanumeric() { c } else { '-' })
        .collect()
}

mod plain_bm25;
#[cfg(test)]
mod tests;
