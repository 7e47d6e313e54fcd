//! `retrieve_memories` (the composite score over hybrid similarity, waypoints and one-hop
//! expansion) and `search_memories` (full text: boolean syntax, phrases, highlights; a
//! malformed query refused with its lenient reading as the suggestion), with the
//! seed's filters and pagination. Every memory a page returns was accessed: the access
//! reinforces it, and the call records that as a fact.

use std::collections::BTreeMap;

use super::rules;
use super::store::internal;
use super::{
    FoundMemory, QueryArgs, RETRIEVE_MEMORIES_TOOL, RetrieveMemoriesData, RetrievedMemory,
    SEARCH_MEMORIES_TOOL, SearchMemoriesData, fail, metadata_value, parse, prepared_embedding,
    sector, unit, user_id,
};
use crate::app::Outcome;
use crate::app::call::{Call, Refusal, access};
use crate::app::{App, ErrorCode};
use crate::events::Fact;
use crate::events::memory::{MemoriesRetrieved, MemoryAccess};
use crate::index::memory::{IndexError, MemoryQuery, Retrieval, read_query};
use crate::projections::memory::{Memory, MemoryState, Owner, millis};

/// Results per page unless `limit` says otherwise; at most [`MAX_LIMIT`].
const DEFAULT_LIMIT: u32 = 10;
const MAX_LIMIT: u32 = 100;
/// Candidates taken from the index for a query that filters: this many times the page's end.
const FILTERED_POOL_FACTOR: usize = 10;
/// The most candidates one query takes from the index.
const MAX_POOL: usize = 5_000;
/// The best direct hits whose waypoints are followed (one hop).
const EXPANDED_HITS: usize = 10;

/// A query's filters, checked against the memories themselves.
struct Filters {
    sectors: Option<Vec<String>>,
    primary: Option<String>,
    min_strength: Option<f64>,
    min_salience: Option<f64>,
    start_ms: Option<i64>,
    end_ms: Option<i64>,
    keywords: Vec<String>,
    tags: Vec<String>,
    category: Option<String>,
}

impl Filters {
    fn parse(args: &QueryArgs) -> Result<Self, Refusal> {
        let sectors = match &args.sectors {
            Some(list) => Some(
                list.iter()
                    .map(|s| sector(s))
                    .collect::<Result<Vec<_>, _>>()?,
            ),
            None => None,
        };
        let primary = args.primary_sector.as_deref().map(sector).transpose()?;
        let time = |at: &Option<String>, name: &str| -> Result<Option<i64>, Refusal> {
            match at {
                None => Ok(None),
                Some(at) => chrono::DateTime::parse_from_rfc3339(at)
                    .map(|t| Some(t.timestamp_millis()))
                    .map_err(|_| {
                        fail(
                            ErrorCode::InvalidArguments,
                            format!("dateRange.{name} is not an ISO 8601 date-time"),
                            "pass times such as 2025-12-07T10:30:00Z",
                        )
                    }),
            }
        };
        let (start_ms, end_ms) = match &args.date_range {
            Some(range) => (time(&range.start, "start")?, time(&range.end, "end")?),
            None => (None, None),
        };
        let metadata = args.metadata.clone().unwrap_or_default();
        let lower = |v: Option<Vec<String>>| -> Vec<String> {
            v.unwrap_or_default()
                .iter()
                .map(|s| s.trim().to_lowercase())
                .filter(|s| !s.is_empty())
                .collect()
        };
        Ok(Self {
            sectors,
            primary,
            min_strength: unit("minStrength", args.min_strength)?,
            min_salience: unit("minSalience", args.min_salience)?,
            start_ms,
            end_ms,
            keywords: lower(metadata.keywords),
            tags: lower(metadata.tags),
            category: metadata
                .category
                .map(|c| c.trim().to_lowercase())
                .filter(|c| !c.is_empty()),
        })
    }

    /// Whether anything beyond the default (live memories) narrows the query.
    fn narrows(&self) -> bool {
        self.sectors.is_some()
            || self.primary.is_some()
            || self.min_strength.is_some()
            || self.min_salience.is_some()
            || self.start_ms.is_some()
            || self.end_ms.is_some()
            || !self.keywords.is_empty()
            || !self.tags.is_empty()
            || self.category.is_some()
    }

    fn passes(&self, m: &Memory, strength: f64) -> bool {
        let strong = match self.min_strength {
            None => !m.soft_deleted,
            Some(min) => strength >= min,
        };
        let has = |wanted: &[String], held: &[std::sync::Arc<str>]| {
            wanted.is_empty()
                || held
                    .iter()
                    .any(|h| wanted.contains(&h.trim().to_lowercase()))
        };
        strong
            && self
                .sectors
                .as_ref()
                .is_none_or(|s| m.sectors.iter().any(|x| s.iter().any(|w| **w == **x)))
            && self
                .primary
                .as_ref()
                .is_none_or(|p| **p == *m.primary_sector)
            && self.min_salience.is_none_or(|min| m.salience >= min)
            && self.start_ms.is_none_or(|t| m.created_ms >= t)
            && self.end_ms.is_none_or(|t| m.created_ms <= t)
            && has(&self.keywords, &m.metadata.keywords)
            && has(&self.tags, &m.metadata.tags)
            && self.category.as_ref().is_none_or(|c| {
                m.metadata
                    .category
                    .as_ref()
                    .is_some_and(|x| x.trim().to_lowercase() == *c)
            })
    }
}

/// Limit and offset, checked.
fn page(args: &QueryArgs) -> Result<(usize, usize), Refusal> {
    let limit = args.limit.unwrap_or(DEFAULT_LIMIT);
    if !(1..=MAX_LIMIT).contains(&limit) {
        return Err(fail(
            ErrorCode::InvalidArguments,
            "limit must be between 1 and 100",
            "pass limit from 1 to 100 (default 10) and page with offset",
        ));
    }
    Ok((limit as usize, args.offset.unwrap_or(0) as usize))
}

/// The query text, when it holds more than blanks.
fn query_text(args: &QueryArgs) -> Option<&str> {
    args.text.as_deref().filter(|t| !t.trim().is_empty())
}

fn pool(offset: usize, limit: usize, narrows: bool) -> usize {
    let end = (offset + limit).max(crate::index::memory::CANDIDATES);
    if narrows {
        (end * FILTERED_POOL_FACTOR).min(MAX_POOL)
    } else {
        end.min(MAX_POOL)
    }
}

/// `search_memories` runs only well-formed queries: a malformed one (an unclosed parenthesis or
/// quote, an operator with nothing to apply to) is refused with what is wrong and the query as
/// a lenient reading would have run it, rather than run as a guess. (`retrieve_memories` takes
/// natural language and reads it leniently.)
fn check_query(text: &str) -> Result<(), Refusal> {
    let reading = read_query(text);
    if reading.problems.is_empty() {
        return Ok(());
    }
    let suggestion = match &reading.repaired {
        Some(repaired) => format!(
            "fix the query, e.g. {repaired} (what it reads as with the faults dropped or closed); \
             operators are AND, OR and NOT in capitals, -word and +word, (groups) and \
             \"phrases\"; quote a phrase to search for those words literally"
        ),
        None => "give at least one word or \"phrase\" to search for; operators are AND, OR \
                 and NOT in capitals, -word and +word, (groups) and \"phrases\""
            .to_owned(),
    };
    Err(fail(
        ErrorCode::InvalidArguments,
        format!("Invalid search query: {}", reading.problems.join("; ")),
        &suggestion,
    ))
}

fn index_failure(e: &IndexError) -> Refusal {
    match e {
        IndexError::ModelMismatch { stored, given } => fail(
            ErrorCode::EmbeddingModelMismatch,
            format!(
                "the memories were embedded with {stored}; the query was embedded with {given}"
            ),
            "restart the server with the embedding model the memories were stored with, or \
             re-embed them (the memory projection is rebuilt from the ledger with the new model)",
        ),
        other => internal(&other.to_string()),
    }
}

/// A memory scored for a page.
struct Scored<'a> {
    memory: &'a Memory,
    score: f64,
    strength: f64,
}

pub(super) fn decide_retrieve(call: &mut Call<'_>) -> Outcome {
    let args: QueryArgs = parse(call)?;
    let user = user_id(&args.user_id)?.to_owned();
    let filters = Filters::parse(&args)?;
    let (limit, offset) = page(&args)?;
    let now_ms = millis(call.at);
    let text = query_text(&args);
    let memories = call.app.memories();
    // Another's memories are as absent as a stranger's; an auditor reads them unchanged.
    let actor = &call.command.actor;
    let owner = memories
        .owner(&user)
        .filter(|_| access::may_read_memories_of(actor, &user));
    let reinforces = access::acts_for(actor, &user);

    // Similarity of each candidate, from the index (hybrid) for a text query.
    let mut similarity: BTreeMap<&str, f64> = BTreeMap::new();
    let mut method = format!(
        "composite {}·similarity + {}·salience + {}·recency + {}·linkWeight (recency half-life \
         {} d)",
        rules::COMPOSITE[0],
        rules::COMPOSITE[1],
        rules::COMPOSITE[2],
        rules::COMPOSITE[3],
        rules::RECENCY_HALF_LIFE_DAYS
    );
    let mut components = vec!["memoryRepository"];
    if let (Some(text), Some(owner)) = (text, owner) {
        let embedding = prepared_embedding(call)?;
        let fusion = rules::fusion_for(embedding.model());
        method = format!(
            "similarity {fusion} with {} ({} d); {method}",
            embedding.model(),
            embedding.dimension()
        );
        components.extend(["embeddingEngine", "fullTextIndex", "graphBuilder"]);
        let index = call
            .app
            .memory_index()
            .lend(memories)
            .map_err(|e| internal(&e.to_string()))?;
        let ranked = index
            .rank(&MemoryQuery {
                owner: &user,
                text,
                embedding: Some(embedding),
                limit: pool(offset, limit, filters.narrows()),
                signals: Retrieval::Hybrid(fusion),
            })
            .map_err(|e| index_failure(&e))?;
        for r in ranked {
            if let Some((id, _)) = owner.memories.get_key_value(r.id.as_str()) {
                similarity.insert(&**id, r.similarity);
            }
        }
    }

    let scored = match owner {
        None => Vec::new(),
        Some(owner) => score(owner, &similarity, text.is_some(), &filters, now_ms),
    };
    let total = scored.len() as u64;
    let chosen: Vec<&Scored<'_>> = scored.iter().skip(offset).take(limit).collect();
    let mut accesses = Vec::with_capacity(chosen.len());
    let mut out = Vec::with_capacity(chosen.len());
    let mut scores = serde_json::Map::new();
    for s in chosen {
        let strength = if s.memory.soft_deleted {
            0.0
        } else if reinforces {
            rules::reinforced(s.strength)
        } else {
            s.strength
        };
        accesses.push(MemoryAccess {
            memory_id: s.memory.id.to_string(),
            score: s.score,
            strength,
        });
        scores.insert(s.memory.id.to_string(), serde_json::json!(s.score));
        out.push(RetrievedMemory {
            id: s.memory.id.to_string(),
            content: s.memory.content.to_string(),
            created_at: s.memory.created_at.to_string(),
            last_accessed: if reinforces {
                call.at.to_owned()
            } else {
                s.memory.last_accessed.to_string()
            },
            strength,
            salience: s.memory.salience,
            primary_sector: s.memory.primary_sector.to_string(),
            metadata: metadata_value(s.memory),
            score: s.score,
        });
    }
    let fact = MemoriesRetrieved {
        user_id: user,
        via: RETRIEVE_MEMORIES_TOOL.to_owned(),
        method,
        memories: accesses,
        total_count: total,
    };
    let data = RetrieveMemoriesData {
        memories: out,
        total_count: total,
        scores,
    };
    let body = call.seed_envelope(data, &components);
    // Reinforcement is a recorded fact: a reader who does not act for the owner records none.
    let facts = if reinforces {
        vec![Fact::MemoriesRetrieved(fact)]
    } else {
        Vec::new()
    };
    call.done_in_current_session(facts, body)
}

/// The owner's memories that pass `filters`, scored and ordered (best first, ties by id). With
/// a text query, only memories the index found similar, or that a waypoint links to one of the
/// best of them (one hop), are candidates.
fn score<'a>(
    owner: &'a Owner,
    similarity: &BTreeMap<&str, f64>,
    with_text: bool,
    filters: &Filters,
    now_ms: i64,
) -> Vec<Scored<'a>> {
    let candidates: Vec<&'a Memory> = if with_text {
        let mut best: Vec<(&str, f64)> = similarity.iter().map(|(k, v)| (*k, *v)).collect();
        best.sort_by(|a, b| b.1.total_cmp(&a.1).then_with(|| a.0.cmp(b.0)));
        let mut ids: std::collections::BTreeSet<&str> = similarity.keys().copied().collect();
        for (id, _) in best.iter().take(EXPANDED_HITS) {
            if let Some(m) = owner.memories.get(*id) {
                ids.extend(m.links.keys().map(|k| &**k));
            }
        }
        ids.into_iter()
            .filter_map(|id| owner.memories.get(id).map(AsRef::as_ref))
            .collect()
    } else {
        owner.memories.values().map(AsRef::as_ref).collect()
    };
    let mut scored: Vec<Scored<'a>> = candidates
        .into_iter()
        .filter_map(|m| {
            let strength = rules::decayed(m.strength, m.strength_at_ms, now_ms, &m.primary_sector);
            if !filters.passes(m, strength) {
                return None;
            }
            let sim = similarity.get(&*m.id).copied().unwrap_or(0.0);
            let link_weight = m
                .links
                .iter()
                .filter_map(|(other, w)| similarity.get(&**other).map(|s| s * w))
                .fold(0.0_f64, f64::max);
            if with_text && sim <= 0.0 && link_weight <= 0.0 {
                return None;
            }
            let recency = rules::recency(m.last_accessed_ms, now_ms);
            Some(Scored {
                memory: m,
                score: rules::composite(sim, m.salience, recency, link_weight),
                strength,
            })
        })
        .collect();
    scored.sort_by(|a, b| {
        b.score
            .total_cmp(&a.score)
            .then_with(|| a.memory.id.cmp(&b.memory.id))
    });
    scored
}

/// One memory a search found: the memory, its rank and its strength now.
type Match<'m> = (&'m Memory, f64, f64);

/// A full-text search: the owner's memories the query matches that pass the filters, best
/// first; rank = bm25 / best bm25 under the owner's statistics.
fn full_text_matches<'m>(
    app: &App,
    memories: &MemoryState,
    owner: &'m Owner,
    user: &str,
    text: &str,
    filters: &Filters,
    now_ms: i64,
) -> Result<Vec<Match<'m>>, Refusal> {
    let index = app
        .memory_index()
        .lend(memories)
        .map_err(|e| internal(&e.to_string()))?;
    let matches = index
        .count_matches(user, text)
        .map_err(|e| index_failure(&e))?;
    let limit_pool = usize::try_from(matches)
        .unwrap_or(usize::MAX)
        .clamp(1, MAX_POOL);
    let ranked = index
        .rank(&MemoryQuery {
            owner: user,
            text,
            embedding: None,
            limit: limit_pool,
            signals: Retrieval::Lexical,
        })
        .map_err(|e| index_failure(&e))?;
    let mut found: Vec<Match<'m>> = Vec::new();
    for r in ranked {
        if r.bm25.is_none() {
            continue;
        }
        let Some(m) = owner.memories.get(r.id.as_str()) else {
            continue;
        };
        let strength = rules::decayed(m.strength, m.strength_at_ms, now_ms, &m.primary_sector);
        if filters.passes(m, strength) {
            found.push((m, r.similarity, strength));
        }
    }
    Ok(found)
}

/// A metadata search: every memory of the owner that passes the filters, newest first, each
/// ranked 1.
fn metadata_matches<'m>(owner: &'m Owner, filters: &Filters, now_ms: i64) -> Vec<Match<'m>> {
    let mut found: Vec<Match<'m>> = Vec::new();
    for m in owner.memories.values() {
        let strength = rules::decayed(m.strength, m.strength_at_ms, now_ms, &m.primary_sector);
        if filters.passes(m, strength) {
            found.push((m, 1.0, strength));
        }
    }
    found.sort_by(|a, b| {
        b.0.created_ms
            .cmp(&a.0.created_ms)
            .then_with(|| a.0.id.cmp(&b.0.id))
    });
    found
}

/// Each chosen memory's highlight and matched terms, from the index (its keywords and tags
/// count as held terms).
fn explained(
    app: &App,
    memories: &MemoryState,
    user: &str,
    text: Option<&str>,
    chosen: &[&Match<'_>],
) -> Result<Vec<(String, Vec<String>)>, Refusal> {
    if chosen.is_empty() {
        return Ok(Vec::new());
    }
    let index = app
        .memory_index()
        .lend(memories)
        .map_err(|e| internal(&e.to_string()))?;
    let keywords: Vec<Vec<String>> = chosen
        .iter()
        .map(|(m, ..)| {
            m.metadata
                .keywords
                .iter()
                .chain(&m.metadata.tags)
                .map(|k| k.to_string())
                .collect()
        })
        .collect();
    let held: Vec<(&str, &[String])> = chosen
        .iter()
        .zip(&keywords)
        .map(|((m, ..), k)| (&*m.content, k.as_slice()))
        .collect();
    index
        .explain(user, text.unwrap_or(""), &held)
        .map_err(|e| index_failure(&e))
}

/// The page of memories as answered, and each one's access as recorded: its strength
/// reinforced when the reader acts for the owner, 0 when it is soft-deleted.
fn found_memories(
    chosen: Vec<&Match<'_>>,
    explained: Vec<(String, Vec<String>)>,
    reinforces: bool,
) -> (Vec<MemoryAccess>, Vec<FoundMemory>) {
    let mut accesses = Vec::with_capacity(chosen.len());
    let mut out = Vec::with_capacity(chosen.len());
    for ((m, rank, strength), (highlight, matched_terms)) in chosen.into_iter().zip(explained) {
        let strength = if m.soft_deleted {
            0.0
        } else if reinforces {
            rules::reinforced(*strength)
        } else {
            *strength
        };
        accesses.push(MemoryAccess {
            memory_id: m.id.to_string(),
            score: *rank,
            strength,
        });
        out.push(FoundMemory {
            id: m.id.to_string(),
            content: m.content.to_string(),
            created_at: m.created_at.to_string(),
            strength,
            salience: m.salience,
            primary_sector: m.primary_sector.to_string(),
            rank: *rank,
            highlight,
            matched_terms,
        });
    }
    (accesses, out)
}

/// `search_memories`: full text (bm25 under the owner's statistics) when a query is given,
/// else metadata filters only; a page of the matches answered, and their reinforcement
/// recorded when the reader acts for the owner.
pub(super) fn decide_search(call: &mut Call<'_>) -> Outcome {
    let args: QueryArgs = parse(call)?;
    let user = user_id(&args.user_id)?.to_owned();
    let filters = Filters::parse(&args)?;
    let (limit, offset) = page(&args)?;
    let now_ms = millis(call.at);
    let text = query_text(&args).map(str::to_owned);
    if let Some(text) = &text {
        check_query(text)?;
    }
    let memories = call.app.memories();
    // Another's memories are as absent as a stranger's; an auditor reads them unchanged.
    let actor = &call.command.actor;
    let owner = memories
        .owner(&user)
        .filter(|_| access::may_read_memories_of(actor, &user));
    let reinforces = access::acts_for(actor, &user);

    // (memory, rank), best first.
    let (found, search_type, method) = match &text {
        Some(text) => (
            match owner {
                Some(owner) => {
                    full_text_matches(call.app, memories, owner, &user, text, &filters, now_ms)?
                }
                None => Vec::new(),
            },
            "full-text",
            "bm25 under the owner's statistics; rank = bm25 / best bm25".to_owned(),
        ),
        None => (
            owner.map_or_else(Vec::new, |owner| metadata_matches(owner, &filters, now_ms)),
            "metadata",
            "filters only; newest first".to_owned(),
        ),
    };
    let total = found.len() as u64;
    let chosen: Vec<&Match<'_>> = found.iter().skip(offset).take(limit).collect();
    let explained = explained(call.app, memories, &user, text.as_deref(), &chosen)?;
    let (accesses, out) = found_memories(chosen, explained, reinforces);
    let fact = MemoriesRetrieved {
        user_id: user,
        via: SEARCH_MEMORIES_TOOL.to_owned(),
        method,
        memories: accesses,
        total_count: total,
    };
    let data = SearchMemoriesData {
        memories: out,
        total_count: total,
        search_type: search_type.to_owned(),
    };
    let body = call.seed_envelope(data, &["memoryRepository", "fullTextIndex"]);
    // Reinforcement is a recorded fact: a reader who does not act for the owner records none.
    let facts = if reinforces {
        vec![Fact::MemoriesRetrieved(fact)]
    } else {
        Vec::new()
    };
    call.done_in_current_session(facts, body)
}
