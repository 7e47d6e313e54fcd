//! The cognition tools' quality on a labelled set, through the real server: `detect_emotion` on
//! each sentence of an emotion set, `detect_bias` on each example of a bias set and
//! `analyze_reasoning` on each passage of a reasoning set, counting
//! the rules' answers and, with a model configured, the model's judgement beside them
//! (docs/cognition.md). The rules' figures are the ones `cargo test --lib
//! cognition::evaluation` prints; this bench adds the model's, as a user's server would give
//! them, so any provider can be measured on the same sets.
//!
//! The model: the provider in the environment (`THINKLEDGER_MODEL_PROVIDER_URL`, with
//! `THINKLEDGER_MODEL` and so on, as for `serve`), else the local test model when
//! `THINKLEDGER_TEST_LLM_GGUF` is set (SmolLM2-135M under llama.cpp, as the model tests start
//! it), else none (the rules alone).
//!
//! After the run the ledger is verified: intact, one event per call.
//!
//! `cargo bench --bench cognition` (full run: the seventh held-out sets and the sentences
//! without a bias); under `cargo test` a smoke run of a few sentences. Overrides:
//! THINKLEDGER_BENCH_SET (the emotion and bias held-out set's number, default 7),
//! THINKLEDGER_BENCH_REASONING_SET (the reasoning held-out set's, default 3),
//! THINKLEDGER_BENCH_PARTS (which of `emotion`, `bias`, `fallacies` to run, comma-separated;
//! default all).

mod common;

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::Command;

use common::stdio::StdioClient;
use common::{env_usize, full_mode, server_binary, start_local_llm, temp_data_dir};
use serde_json::{Value, json};

/// The sign a labelled sentence's valence should have (`+`, `-`, or `0`: not clearly signed).
fn sign_of(valence: f64) -> &'static str {
    if valence > 0.0 {
        "+"
    } else if valence < 0.0 {
        "-"
    } else {
        "0"
    }
}

fn model_sign(valence: &str) -> &'static str {
    match valence {
        "positive" => "+",
        "negative" => "-",
        _ => "0",
    }
}

fn rows(path: &PathBuf) -> Vec<Vec<String>> {
    std::fs::read_to_string(path)
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
        .lines()
        .filter(|l| !l.starts_with('#') && !l.trim().is_empty())
        .map(|l| l.split('\t').map(str::to_owned).collect())
        .collect()
}

fn data(result: &Value) -> &Value {
    assert_ne!(result["isError"], json!(true), "the call failed: {result}");
    &result["structuredContent"]["data"]
}

/// (right, asked) per label, and in all.
#[derive(Default)]
struct Tally(BTreeMap<String, (usize, usize)>);

impl Tally {
    fn add(&mut self, label: &str, right: bool) {
        let e = self.0.entry(label.to_owned()).or_default();
        e.0 += usize::from(right);
        e.1 += 1;
    }

    fn total(&self) -> (usize, usize) {
        self.0
            .values()
            .fold((0, 0), |(r, n), (a, b)| (r + a, n + b))
    }
}

/// Whether the run includes `part` (THINKLEDGER_BENCH_PARTS; all by default).
fn wants(part: &str) -> bool {
    std::env::var("THINKLEDGER_BENCH_PARTS")
        .map_or(true, |parts| parts.split(',').any(|p| p.trim() == part))
}

fn main() {
    let full = full_mode();
    let set = env_usize("SET", 7);
    let local = if std::env::var_os("THINKLEDGER_MODEL_PROVIDER_URL").is_some() {
        None
    } else {
        start_local_llm()
    };
    let dir = temp_data_dir();
    let mut command = Command::new(server_binary());
    command
        .arg("--data-dir")
        .arg(dir.path())
        .arg("serve")
        .arg("--toolsets")
        .arg("cognition");
    let model = match &local {
        Some(llm) => {
            command
                .env(
                    "THINKLEDGER_MODEL_PROVIDER_URL",
                    format!("{}/v1", llm.base_url),
                )
                .env("THINKLEDGER_MODEL", "smollm2-test");
            "the local test model (SmolLM2-135M-Instruct Q4_1)".to_owned()
        }
        None => match std::env::var("THINKLEDGER_MODEL_PROVIDER_URL") {
            Ok(url) if !url.trim().is_empty() => format!("the configured provider ({url})"),
            _ => "none".to_owned(),
        },
    };
    let mut client = StdioClient::spawn_command(command, &dir.path().join("server.log"));
    client.initialize();
    let sets = PathBuf::from(concat!(env!("CARGO_MANIFEST_DIR"), "/tests/cognition"));
    println!("cognition quality: held-out set {set}, model: {model}");

    // Emotion: primary and valence sign, the rules' and the model's.
    let mut emotion = rows(&sets.join(format!("emotion_heldout{set}.tsv")));
    if !full {
        emotion.truncate(3);
    }
    if !wants("emotion") {
        emotion.clear();
    }
    let mut calls: u64 = 0;
    let (mut rules, mut judged) = (Tally::default(), Tally::default());
    let (mut rules_signs, mut model_signs, mut signed, mut unreadable) = (0, 0, 0, 0);
    for row in &emotion {
        let (label, sign, text) = (&row[0], &row[1], &row[2]);
        let result = client.call_tool("detect_emotion", json!({"text": text}));
        calls += 1;
        let d = data(&result);
        rules.add(
            label,
            d["discrete"]["primary"].as_str() == Some(label.as_str()),
        );
        let judgement = &d["modelJudgement"];
        if judgement.is_object() {
            if judgement["status"] == "unreadable" {
                unreadable += 1;
            }
            judged.add(label, judgement["emotion"].as_str() == Some(label.as_str()));
        }
        if sign != "0" {
            signed += 1;
            let v = d["circumplex"]["valence"].as_f64().expect("valence");
            rules_signs += usize::from(sign_of(v) == sign);
            let m = judgement["valence"].as_str().map(model_sign);
            model_signs += usize::from(m == Some(sign.as_str()));
        }
    }
    let (r, n) = rules.total();
    println!("  emotion, primary: rules {r}/{n}");
    if !judged.0.is_empty() {
        let (m, _) = judged.total();
        println!("  emotion, primary: model {m}/{n} ({unreadable} answers unreadable)");
    }
    println!(
        "  emotion, valence sign of the {signed} clearly signed: rules {rules_signs}, model {}",
        if judged.0.is_empty() {
            "-".to_owned()
        } else {
            model_signs.to_string()
        }
    );
    for (label, (right, asked)) in &rules.0 {
        let model = judged
            .0
            .get(label)
            .map_or("-".to_owned(), |(m, _)| m.to_string());
        println!("    {label:<12} rules {right}/{asked}  model {model}/{asked}");
    }

    // Bias: each run of eight examples (one per type); then sound reasoning (false alarms).
    let mut bias = rows(&sets.join(format!("bias_heldout{set}.tsv")));
    if !full {
        bias.truncate(2);
    }
    if !wants("bias") {
        bias.clear();
    }
    for (run, examples) in bias.chunks(8).enumerate() {
        let (mut by_rules, mut by_model) = (0, 0);
        for row in examples {
            let result = client.call_tool("detect_bias", json!({"reasoning": row[1]}));
            calls += 1;
            let d = data(&result);
            let found = d["biases"]
                .as_array()
                .expect("biases")
                .iter()
                .any(|b| b["type"] == row[0].as_str());
            by_rules += usize::from(found);
            by_model += usize::from(
                d["modelJudgement"]["biases"]
                    .as_array()
                    .is_some_and(|b| b.iter().any(|t| t == row[0].as_str())),
            );
        }
        println!(
            "  bias, run {}: rules {by_rules}/{n}, model {by_model}/{n}",
            run + 1,
            n = examples.len()
        );
    }
    if full && wants("bias") {
        let none = rows(&sets.join("bias_none.tsv"));
        let (mut by_rules, mut by_model) = (0, 0);
        for row in &none {
            let result = client.call_tool("detect_bias", json!({"reasoning": row[1]}));
            calls += 1;
            let d = data(&result);
            by_rules += usize::from(!d["biases"].as_array().expect("biases").is_empty());
            by_model += usize::from(
                d["modelJudgement"]["biases"]
                    .as_array()
                    .is_some_and(|b| !b.is_empty()),
            );
        }
        println!(
            "  bias, sound reasoning flagged (bias_none.tsv): rules {by_rules}/{n}, model \
             {by_model}/{n} (a text is left out of its own examples' vote)",
            n = none.len()
        );
    }
    if wants("fallacies") {
        calls += fallacies(&mut client, &sets, full);
    }
    client.finish();
    // Every call is one event, and the ledger is intact.
    common::verify_ledger_events(&thinkledger::server::ledger_dir(dir.path()), calls);
}

/// `analyze_reasoning` on a reasoning set: for each fallacy passage, whether the rules' findings
/// and the model's judgement name its type; for sound passages and those without an argument,
/// whether either names any fallacy. Returns the calls made.
fn fallacies(client: &mut StdioClient, sets: &std::path::Path, full: bool) -> u64 {
    let set = env_usize("REASONING_SET", 3);
    let mut passages: Vec<Vec<String>> = rows(&sets.join(format!("reasoning_heldout{set}.tsv")))
        .into_iter()
        .filter(|r| r[0] != "label")
        .collect();
    if !full {
        passages.truncate(2);
    }
    let (mut rules, mut judged) = (Tally::default(), Tally::default());
    let mut unreadable = 0;
    for row in &passages {
        let (label, text) = (&row[0], &row[1]);
        let result = client.call_tool("analyze_reasoning", json!({"reasoning": text}));
        let d = data(&result);
        let by_rules: Vec<String> = d["weaknesses"]
            .as_array()
            .expect("weaknesses")
            .iter()
            .filter_map(|w| w.as_str())
            .filter_map(|w| {
                [
                    ("Circular reasoning", "circular"),
                    ("Hasty generalisation", "hasty_generalisation"),
                ]
                .iter()
                .find(|(name, _)| w.starts_with(name))
                .map(|(_, l)| (*l).to_owned())
            })
            .collect();
        let judgement = &d["modelJudgement"];
        unreadable += usize::from(judgement["status"] == "unreadable");
        let by_model: Option<Vec<String>> = judgement.is_object().then(|| {
            judgement["fallacies"]
                .as_array()
                .map(|f| {
                    f.iter()
                        .filter_map(|x| x.as_str().map(str::to_owned))
                        .collect()
                })
                .unwrap_or_default()
        });
        // A fallacy passage is right when its type is named; the others when none is.
        let right = |named: &[String]| match label.as_str() {
            "sound" | "no_argument" => named.is_empty(),
            fallacy => named.iter().any(|n| n == fallacy),
        };
        rules.add(label, right(&by_rules));
        if let Some(named) = by_model {
            judged.add(label, right(&named));
        }
    }
    println!(
        "  fallacies (reasoning_heldout{set}.tsv; sound and no_argument: right when nothing is \
         named){}",
        if judged.0.is_empty() {
            String::new()
        } else {
            format!(", {unreadable} model answers unreadable")
        }
    );
    for (label, (right, asked)) in &rules.0 {
        let model = judged
            .0
            .get(label)
            .map_or("-".to_owned(), |(m, _)| m.to_string());
        println!("    {label:<21} rules {right}/{asked}  model {model}/{asked}");
    }
    u64::try_from(passages.len()).expect("passages")
}
