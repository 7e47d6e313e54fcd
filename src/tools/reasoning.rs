//! The `reasoning://` resources of the deliberation workspace (the ReasonKit Think v2 catalog):
//! the thinking-mode catalog, provider and transport boundaries, patterns, memory sinks, one
//! session's assumption ledger, checkpoints, skeleton phases and graph, telemetry, and
//! Gemini-compatible tool schemas. Reads record nothing and see only durable state, so every
//! document survives a restart unchanged.

use rmcp::ErrorData;
use rmcp::model::{Resource, ResourceTemplate};
use serde_json::{Map, Value, json};

use crate::app::deliberation::outputs::{
    AnalysisOut, BlockingGapOut, NodeOut, RedactionOut, RouteDecisionOut, assumption_blocks,
};
use crate::app::deliberation::{graph, modes};
use crate::app::providers;
use crate::app::{App, access};
use crate::events::{Actor, SessionId};
use crate::ledger::LedgerHandle;
use crate::projections::deliberation::Text;
use crate::projections::{Deliberation, DeliberationState};

use super::catalog::Catalog;
use super::resources::{not_found, unknown};

pub(super) const PREFIX: &str = "reasoning://";

const STATIC: &[(&str, &str, &str, &str)] = &[
    (
        "reasoning://thinking-modes",
        "thinking-modes",
        "Thinking modes",
        "The mode catalog: each mode's internal method, aliases, estimated cost, primary tools, \
         prompt packs, resources, required behavior, safety rules and output expectations.",
    ),
    (
        "reasoning://config/providers",
        "config-providers",
        "Analysis providers",
        "The active heuristic provider, the model-backed and retrieval boundaries (fail-closed), \
         the environment variables they need, and whether they are set — never their values.",
    ),
    (
        "reasoning://config/transports",
        "config-transports",
        "Transports",
        "The transport this connection uses and the transports this build offers.",
    ),
    (
        "reasoning://patterns",
        "patterns",
        "Reasoning patterns",
        "The pattern registry apply_reasoning_pattern uses, and the algorithm templates of \
         apply_algorithm_template.",
    ),
    (
        "reasoning://memory/sinks",
        "memory-sinks",
        "Memory sinks",
        "Where deliberation state is kept (the ledger and its stores) and which sinks are not \
         available in this build.",
    ),
    (
        "reasoning://telemetry/summary",
        "telemetry-summary",
        "Telemetry summary",
        "Tool calls, outcomes and decision latency, verification outcomes, pruning, graph depth \
         and skeleton-of-thought counters, folded from the ledger.",
    ),
];

const TEMPLATES: &[(&str, &str, &str, &str)] = &[
    (
        "reasoning://session/{id}/deliberation",
        "session-deliberation",
        "A deliberation",
        "One session's deliberation: goal, mode, budgets, status, nodes with scores, edges, \
         branches, claims with the verification matrix, routes and consensus.",
    ),
    (
        "reasoning://session/{id}/assumptions",
        "session-assumptions",
        "Assumption ledger",
        "A session's assumptions, the node-to-assumption index and the assumptions that \
         currently block consensus.",
    ),
    (
        "reasoning://session/{id}/checkpoints",
        "session-checkpoints",
        "Quality checkpoints",
        "A session's persisted quality gates: score, tier, route decision, blocking gaps.",
    ),
    (
        "reasoning://session/{id}/skeleton-phases",
        "session-skeleton-phases",
        "Skeleton-of-thought phases",
        "Every skeleton-of-thought phase of a session.",
    ),
    (
        "reasoning://session/{id}/skeleton-phase/{phase_id}",
        "session-skeleton-phase",
        "One skeleton-of-thought phase",
        "One phase with its prompts, skeleton ids, elaboration ids, merge and checkpoint \
         references.",
    ),
    (
        "reasoning://schemas/{name}",
        "schemas",
        "Tool schemas (Gemini-compatible)",
        "A tool's input and output JSON Schemas in the subset Vertex AI / Gemini function \
         declarations accept; `reasoning://schemas/index` lists the names.",
    ),
];

pub(super) fn list() -> Vec<Resource> {
    STATIC
        .iter()
        .map(|(uri, name, title, description)| {
            Resource::new(*uri, *name)
                .with_title(*title)
                .with_description(*description)
                .with_mime_type("application/json")
        })
        .collect()
}

pub(super) fn templates() -> Vec<ResourceTemplate> {
    TEMPLATES
        .iter()
        .map(|(uri, name, title, description)| {
            ResourceTemplate::new(*uri, *name)
                .with_title(*title)
                .with_description(*description)
                .with_mime_type("application/json")
        })
        .collect()
}

/// Reads one `reasoning://` resource.
pub(super) async fn read(
    ledger: &LedgerHandle<App>,
    catalog: &Catalog,
    transport: &str,
    effects: &dyn crate::effects::Effects,
    uri: &str,
    reader: Actor,
) -> Result<Value, ErrorData> {
    let unavailable =
        |e: crate::ledger::LedgerError| ErrorData::internal_error(e.to_string(), None);
    let rest = uri.strip_prefix(PREFIX).unwrap_or(uri);
    match rest {
        "thinking-modes" => return Ok(thinking_modes()),
        "config/providers" => {
            return Ok(providers::providers_report(effects));
        }
        "config/transports" => return Ok(transports(transport)),
        "patterns" => return Ok(patterns()),
        "memory/sinks" => return Ok(memory_sinks()),
        "telemetry/summary" => {
            // Counts of every principal's calls: for the process owner and auditors only.
            if reader.principal != crate::events::LOCAL_PRINCIPAL && !access::is_auditor(&reader) {
                return Err(not_found(
                    uri,
                    format!(
                        "{uri} counts every principal's calls; {} is neither an auditor nor the \
                         server's owner",
                        reader.principal
                    ),
                ));
            }
            return super::arrival::query(ledger, Box::new(telemetry_summary))
                .await
                .map_err(unavailable);
        }
        _ => {}
    }
    if let Some(name) = rest.strip_prefix("schemas/") {
        return schemas(catalog, name).ok_or_else(|| {
            not_found(
                uri,
                format!("no tool named \"{name}\"; read reasoning://schemas/index for the names"),
            )
        });
    }
    let Some(session_part) = rest.strip_prefix("session/") else {
        return Err(unknown(uri));
    };
    let (raw_id, view) = session_part.split_once('/').unwrap_or((session_part, ""));
    let Some(id) = SessionId::parse(raw_id) else {
        return Err(not_found(
            uri,
            format!("\"{raw_id}\" is not a session id; read ledger://sessions for the list"),
        ));
    };
    let view = view.to_owned();
    let known = matches!(
        view.as_str(),
        "deliberation" | "assumptions" | "checkpoints" | "skeleton-phases"
    ) || view.starts_with("skeleton-phase/");
    if !known {
        return Err(unknown(uri));
    }
    let requested = id.clone();
    let document = super::arrival::query(ledger, Box::new(move |app: &App| {
            let state = app.deliberations();
            // Another principal's deliberation is as absent as a missing one.
            let readable = app
                .state()
                .head(&requested)
                .is_some_and(|s| access::may_read(&reader, &s.principal));
            let Some(d) = state.get(&requested).filter(|_| readable) else {
                return Value::Null;
            };
            match view.as_str() {
                "deliberation" => deliberation_document(state, d),
                "assumptions" => assumptions_document(state, d),
                "checkpoints" => checkpoints_document(d),
                "skeleton-phases" => json!({
                    "session_id": d.session_id.as_str(),
                    "deliberation_id": d.deliberation_id,
                    "phases": d.phases.iter().map(|p| phase_document(state, d, p)).collect::<Vec<_>>(),
                }),
                other => {
                    let phase_id = other.trim_start_matches("skeleton-phase/");
                    d.phase(phase_id).map_or_else(
                        || json!({ "missing_phase": phase_id }),
                        |p| phase_document(state, d, p),
                    )
                }
            }
        }))
        .await
        .map_err(unavailable)?;
    if document.is_null() {
        return Err(not_found(
            uri,
            format!(
                "session {id} holds no deliberation; start one with start_deliberation (or \
                 read ledger://sessions for the sessions that exist)"
            ),
        ));
    }
    if let Some(phase) = document.get("missing_phase").and_then(Value::as_str) {
        return Err(not_found(
            uri,
            format!(
                "session {id} has no skeleton phase \"{phase}\"; read \
                 reasoning://session/{id}/skeleton-phases for its phases"
            ),
        ));
    }
    Ok(document)
}

fn thinking_modes() -> Value {
    json!({
        "modes": modes::contracts(),
        "profiles": ["quick", "balanced", "deep", "paranoid"],
        "internal_values": {
            "cot": "linear tracking behind Quick",
            "tot": "branching and pruning behind Explore",
            "got": "DAG synthesis behind Map and Sketch",
            "reasonkit": "governed reasoning with quality gates and stages behind Test",
        },
    })
}

fn transports(active: &str) -> Value {
    let state = |name: &str| {
        if name == active {
            "active"
        } else {
            "available"
        }
    };
    json!({
        "active": active,
        "transports": [
            {
                "name": "stdio",
                "state": state("stdio"),
                "how": "thinkledger serve (the default)",
            },
            {
                "name": "streamable_http",
                "state": state("http"),
                "how": "thinkledger serve --http 127.0.0.1:PORT (MCP endpoint /mcp; loopback Host names only unless --allow-host)",
            },
        ],
    })
}

fn patterns() -> Value {
    json!({
        "patterns": graph::patterns(),
        "algorithm_templates": graph::templates(),
    })
}

fn memory_sinks() -> Value {
    json!({
        "sinks": [
            {
                "name": "ledger",
                "state": "active",
                "what": "every tool call as a hash-chained event in ledger/log.dat, indexed by sled; all deliberation state is a projection rebuilt from it at start-up",
                "durability": "fsynced before each answer",
            },
            {
                "name": "text_store",
                "state": "active",
                "what": "caller and derived free text (node content, claims, evidence, originals of redacted text) in ledger/log.dat beside the events that reference them by salted commitments; erasable with `thinkledger erase` (overwritten in place)",
                "durability": "fdatasynced with the events that reference it",
            },
            {
                "name": "signed_checkpoints",
                "state": "active",
                "what": "Ed25519-signed Merkle checkpoints of the log in ledger/checkpoints.jsonl",
                "durability": "written when a session closes, every 1,000 events and every minute while the log grows",
            },
            {
                "name": "projection_snapshot",
                "state": "unavailable",
                "reason": "not implemented: projections are rebuilt from the log at every start (the log is the only truth)",
            },
            {
                "name": "external_memory",
                "state": "unavailable",
                "reason": "no external memory store is configured in this build",
            },
        ],
    })
}

/// Telemetry as `reasoning://telemetry/summary` shows it.
pub fn telemetry_summary(app: &App) -> Value {
    let t = app.telemetry();
    let mut tools = Map::new();
    let mut calls = 0;
    for (name, s) in &t.tools {
        calls += s.calls;
        let mean = (s.timed_calls > 0)
            .then(|| s.decide_micros_total as f64 / s.timed_calls as f64 / 1000.0);
        tools.insert(
            name.clone(),
            json!({
                "calls": s.calls,
                "ok": s.ok,
                "rejected": s.rejected,
                "failed": s.failed,
                "rejection_codes": s.rejection_codes,
                "latency_ms_total": s.decide_micros_total as f64 / 1000.0,
                "latency_ms_mean": mean,
                "latency_ms_max": s.decide_micros_max as f64 / 1000.0,
                "timed_calls": s.timed_calls,
            }),
        );
    }
    json!({
        "source": "folded from the ledger at start-up and on every commit; survives restarts",
        "latency_note": "latency is the time the writer spent deciding a call (parsing, rules, facts), recorded in each event as outcome.decideMicros; it excludes queueing and the durable write",
        "events": t.events,
        "tool_calls": calls,
        "tools": tools,
        "verification": {
            "rounds": t.verification_rounds,
            "outcomes": t.verification_outcomes,
        },
        "pruned_nodes": t.pruned_nodes,
        "nodes_added": t.nodes_added,
        "graph_depth": { "latest": t.latest_graph_depth, "max": t.max_graph_depth },
        "checkpoints": t.checkpoints,
        "consensus_reached": t.consensus_reached,
        "skeleton_of_thought": t.skeleton,
        "deliberations": app.deliberations().all().count(),
    })
}

fn text(state: &DeliberationState, t: &Text) -> Value {
    state
        .text(t)
        .map_or(Value::Null, |s| Value::String(s.to_owned()))
}

fn redactions(t: &Text) -> Vec<RedactionOut> {
    t.redactions.iter().map(RedactionOut::from).collect()
}

fn deliberation_document(state: &DeliberationState, d: &Deliberation) -> Value {
    let nodes: Vec<NodeOut> = d.nodes.iter().map(|n| NodeOut::of(state, n)).collect();
    let edges: Vec<Value> = d
        .edges
        .iter()
        .map(|e| {
            json!({ "from": e.from, "to": e.to, "edge_type": e.edge_type, "created_at": e.created.at })
        })
        .collect();
    let claims: Vec<Value> = d
        .claims
        .iter()
        .map(|c| {
            json!({
                "claim_id": c.claim_id,
                "text": text(state, &c.text),
                "criticality": c.criticality,
                "status": c.status,
                "node_ids": c.node_ids,
                "resolution": c.resolution.as_ref().map(|(outcome, why)| json!({"outcome": outcome, "rationale": text(state, why)})),
                "redactions": redactions(&c.text),
                "created_at": c.created.at,
                "updated_at": c.updated.at,
            })
        })
        .collect();
    let evidence: Vec<Value> = d
        .evidence
        .iter()
        .map(|e| {
            json!({
                "evidence_id": e.evidence_id,
                "source": text(state, &e.source),
                "excerpt": e.excerpt.as_ref().map(|x| text(state, x)),
                "tier": e.tier,
                "independence_group": e.independence_group,
                "supports_claims": e.supports_claims,
                "refutes_claims": e.refutes_claims,
                "created_at": e.created.at,
            })
        })
        .collect();
    let routes: Vec<Value> = d
        .routes
        .iter()
        .map(|r| {
            json!({
                "route_id": r.route_id,
                "source": r.source,
                "user_mode": r.user_mode,
                "internal_method": r.internal_method,
                "route_decision": RouteDecisionOut::from(&r.decision),
                "created_at": r.created.at,
            })
        })
        .collect();
    json!({
        "session_id": d.session_id.as_str(),
        "deliberation_id": d.deliberation_id,
        "goal": text(state, &d.goal),
        "goal_redactions": redactions(&d.goal),
        "constraints": d.constraints.iter().map(|c| text(state, c)).collect::<Vec<_>>(),
        "user_mode": d.user_mode,
        "internal_method": d.internal_method,
        "profile": d.profile,
        "budgets": {
            "max_nodes": d.budgets.max_nodes,
            "max_depth": d.budgets.max_depth,
            "max_expansions_per_call": d.budgets.max_expansions_per_call,
            "max_verification_questions": d.budgets.max_verification_questions,
        },
        "status": d.status,
        "root_node_id": d.root_node_id,
        "convergence_node_id": d.convergence_node_id,
        "created_at": d.created.at,
        "node_count": d.nodes.len(),
        "live_node_count": d.live_nodes().count(),
        "graph_depth": d.graph_depth(),
        "branch_index": d.branch_index,
        "rubric": d.rubric,
        "nodes": nodes,
        "edges": edges,
        "claims": claims,
        "evidence": evidence,
        "verification_questions": d.questions.iter().map(|q| json!({"claim_id": q.claim_id, "question": text(state, &q.question)})).collect::<Vec<_>>(),
        "routes": routes,
        "consensus": d.consensus.as_ref().map(|c| json!({
            "answer": text(state, &c.answer),
            "confidence": c.confidence,
            "semantic_confidence": Value::Null,
            "route_decision": RouteDecisionOut::from(&c.route_decision),
            "checks": c.checks.iter().map(|k| json!({"check": k.check, "passed": k.passed, "detail": k.detail})).collect::<Vec<_>>(),
            "analysis": AnalysisOut::from(&c.analysis),
            "created_at": c.created.at,
        })),
    })
}

fn assumptions_document(state: &DeliberationState, d: &Deliberation) -> Value {
    let assumptions: Vec<Value> = d
        .assumptions
        .iter()
        .map(|a| {
            json!({
                "assumption_id": a.assumption_id,
                "text": text(state, &a.text),
                "criticality": a.criticality,
                "status": a.status,
                "verifiable": a.verifiable,
                "source_node_ids": a.source_node_ids,
                "evidence": a.evidence.iter().map(|e| text(state, e)).collect::<Vec<_>>(),
                "rationale": a.rationale.as_ref().map(|r| text(state, r)),
                "redactions": redactions(&a.text),
                "analysis": AnalysisOut::from(&a.analysis),
                "blocking": assumption_blocks(a),
                "created_at": a.created.at,
                "updated_at": a.updated.at,
            })
        })
        .collect();
    let blocking: Vec<&str> = d
        .assumptions
        .iter()
        .filter(|a| assumption_blocks(a))
        .map(|a| a.assumption_id.as_str())
        .collect();
    json!({
        "session_id": d.session_id.as_str(),
        "deliberation_id": d.deliberation_id,
        "assumptions": assumptions,
        "node_to_assumptions": d.assumptions_by_node,
        "blocking_assumptions": blocking,
    })
}

fn checkpoints_document(d: &Deliberation) -> Value {
    let checkpoints: Vec<Value> = d
        .checkpoints
        .iter()
        .map(|c| {
            json!({
                "checkpoint_id": c.checkpoint_id,
                "quality_score": c.quality_score,
                "quality_tier": c.quality_tier,
                "route_decision": RouteDecisionOut::from(&c.route_decision),
                "blocking_gaps": c.blocking_gaps.iter().map(BlockingGapOut::from).collect::<Vec<_>>(),
                "recommended_tools": c.recommended_tools,
                "phase_id": c.phase_id,
                "analysis": AnalysisOut::from(&c.analysis),
                "created_at": c.created.at,
                "seq": c.created.seq,
            })
        })
        .collect();
    json!({
        "session_id": d.session_id.as_str(),
        "deliberation_id": d.deliberation_id,
        "checkpoints": checkpoints,
    })
}

fn phase_document(
    state: &DeliberationState,
    d: &Deliberation,
    p: &crate::projections::deliberation::SkeletonPhase,
) -> Value {
    let node = |id: &String| d.node(id).map(|n| NodeOut::of(state, n));
    json!({
        "phase_id": p.phase_id,
        "source_node_id": p.source_node_id,
        "state": p.state,
        "style": p.style,
        "suitability": {
            "suitable": p.suitability.suitable,
            "score": p.suitability.score,
            "reasons": p.suitability.reasons,
        },
        "skeleton_node_ids": p.skeleton_node_ids,
        "skeleton_nodes": p.skeleton_node_ids.iter().filter_map(node).collect::<Vec<_>>(),
        "elaboration_node_ids_by_skeleton": p.elaboration_node_ids_by_skeleton,
        "prompt_pack": p.prompt_pack,
        "prompts": modes::prompt_packs().into_iter().find(|k| k.name == p.prompt_pack),
        "score_run_ids": p.score_run_ids,
        "checkpoint_ids": p.checkpoint_ids,
        "merge_node_id": p.merge_node_id,
        "analysis": AnalysisOut::from(&p.analysis),
        "created_at": p.created.at,
        "updated_at": p.updated.at,
    })
}

/// `reasoning://schemas/{name}`: a tool's schemas in the Gemini function-declaration subset, or
/// the index of names.
fn schemas(catalog: &Catalog, name: &str) -> Option<Value> {
    if name == "index" {
        let names: Vec<String> = catalog
            .all_entries()
            .iter()
            .map(|e| e.tool.name.to_string())
            .collect();
        return Some(json!({ "tools": names }));
    }
    let entry = catalog.entry(name)?;
    let input = Value::Object((*entry.tool.input_schema).clone());
    let output = Value::Object((*entry.documented_output).clone());
    Some(json!({
        "name": name,
        "dialect": "Vertex AI / Gemini function declarations (OpenAPI 3.0 schema subset): references inlined, nullable instead of null types, no $schema, $defs, additionalProperties, format or default",
        "parameters": gemini_compatible(&input),
        "response": gemini_compatible(&output),
    }))
}

/// A JSON Schema rewritten into the subset Gemini accepts: `$ref`s to `$defs` inlined (a
/// recursive reference becomes a plain object), `["T", "null"]` and `anyOf [T, null]` become
/// `T` with `nullable: true`, and keywords it rejects are dropped.
pub fn gemini_compatible(schema: &Value) -> Value {
    let defs = schema
        .get("$defs")
        .or_else(|| schema.get("definitions"))
        .cloned()
        .unwrap_or(Value::Null);
    convert(schema, &defs, 0)
}

fn convert(value: &Value, defs: &Value, depth: usize) -> Value {
    const DROP: &[&str] = &[
        "$schema",
        "$defs",
        "definitions",
        "additionalProperties",
        "format",
        "default",
        "examples",
        "const",
        "title",
    ];
    match value {
        Value::Object(map) => {
            if let Some(target) = map.get("$ref").and_then(Value::as_str) {
                let name = target.rsplit('/').next().unwrap_or_default();
                return match defs.get(name) {
                    Some(def) if depth < 16 => convert(def, defs, depth + 1),
                    _ => json!({ "type": "object" }),
                };
            }
            let mut out = Map::new();
            for (key, v) in map {
                if DROP.contains(&key.as_str()) {
                    continue;
                }
                match (key.as_str(), v) {
                    ("type", Value::Array(types)) => {
                        let non_null: Vec<&Value> = types
                            .iter()
                            .filter(|t| t.as_str() != Some("null"))
                            .collect();
                        if non_null.len() < types.len() {
                            out.insert("nullable".into(), Value::Bool(true));
                        }
                        if let Some(first) = non_null.first() {
                            out.insert("type".into(), (*first).clone());
                        }
                    }
                    ("anyOf" | "oneOf", Value::Array(options)) => {
                        let non_null: Vec<&Value> = options
                            .iter()
                            .filter(|o| o.get("type").and_then(Value::as_str) != Some("null"))
                            .collect();
                        if non_null.len() < options.len() {
                            out.insert("nullable".into(), Value::Bool(true));
                        }
                        if non_null.len() == 1 {
                            if let Value::Object(inner) = convert(non_null[0], defs, depth + 1) {
                                out.extend(inner);
                            }
                        } else {
                            out.insert(
                                "anyOf".into(),
                                Value::Array(
                                    non_null
                                        .iter()
                                        .map(|o| convert(o, defs, depth + 1))
                                        .collect(),
                                ),
                            );
                        }
                    }
                    _ => {
                        out.insert(key.clone(), convert(v, defs, depth));
                    }
                }
            }
            Value::Object(out)
        }
        Value::Array(items) => {
            Value::Array(items.iter().map(|i| convert(i, defs, depth)).collect())
        }
        other => other.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gemini_schemas_inline_refs_and_drop_unsupported_keywords() {
        let schema = json!({
            "$schema": "https://json-schema.org/draft/2020-12/schema",
            "type": "object",
            "additionalProperties": false,
            "properties": {
                "a": { "type": ["string", "null"], "default": null },
                "b": { "$ref": "#/$defs/B" },
                "c": { "anyOf": [{ "$ref": "#/$defs/B" }, { "type": "null" }] },
                "n": { "type": "integer", "format": "uint32", "minimum": 0 }
            },
            "$defs": { "B": { "type": "object", "properties": { "x": { "type": "number" } } } }
        });
        let out = gemini_compatible(&schema);
        let text = out.to_string();
        for banned in [
            "$schema",
            "$defs",
            "$ref",
            "additionalProperties",
            "format",
            "default",
        ] {
            assert!(!text.contains(banned), "{banned} in {text}");
        }
        assert_eq!(
            out["properties"]["a"],
            json!({"type": "string", "nullable": true})
        );
        assert_eq!(out["properties"]["b"]["properties"]["x"]["type"], "number");
        assert_eq!(out["properties"]["c"]["nullable"], true);
        assert_eq!(out["properties"]["c"]["type"], "object");
    }
}
