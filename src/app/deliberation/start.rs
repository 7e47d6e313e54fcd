//! Starting a deliberation: its session (named, the caller's current one, or a new one), its
//! id, the scanned goal and constraints, and the root node, as the facts that start it.
//!
//! Must not know MCP or storage.

use super::mode::Mode;
use crate::app::ErrorCode;
use crate::app::Rejection;
use crate::app::call::{Call, PathStep, Refusal, target};
use crate::events::deliberation::{Budgets, NodeAdded};
use crate::events::{Fact, SessionId};

/// What starting a deliberation needs.
pub struct StartPlan<'s> {
    /// The session to start in, if the caller named one (it must exist and hold no
    /// deliberation yet).
    pub session_id: Option<&'s str>,
    pub goal: &'s str,
    /// Path of the goal's commitment in the recorded arguments.
    pub goal_path: &'s [PathStep],
    pub constraints: &'s [String],
    /// Key of the constraints array in the recorded arguments.
    pub constraints_key: &'static str,
    pub mode: Mode,
    pub profile: &'static str,
    pub budgets: Budgets,
}

/// A started deliberation: its session, id, root node and the facts that start it
/// (`SessionStarted` if new, `DeliberationStarted`, the root `NodeAdded`).
pub struct Started {
    pub session_id: SessionId,
    pub deliberation_id: String,
    pub root_node_id: String,
    pub facts: Vec<Fact>,
}

/// Plans a new deliberation. Without a session id it starts in the caller's current session if
/// that has not started yet, else in a new session (the tools layer then makes it the
/// connection's).
pub fn plan_start(call: &mut Call<'_>, plan: &StartPlan<'_>) -> Result<Started, Refusal> {
    if plan.goal.trim().is_empty() {
        return Err((
            Rejection::new(
                ErrorCode::InvalidArguments,
                "goal is empty",
                "state the question or task to deliberate on",
            ),
            None,
        ));
    }
    if plan.constraints.len() > 64 {
        return Err((
            Rejection::new(
                ErrorCode::InvalidArguments,
                format!("{} constraints; at most 64", plan.constraints.len()),
                "merge related constraints",
            ),
            None,
        ));
    }
    let (session_id, mut facts) = match plan.session_id {
        Some(raw) => {
            let target = target(call.app, call.command, Some(raw))?;
            let id = target.id();
            if call.app.deliberations().get(&id).is_some() {
                return Err((
                    Rejection::new(
                        ErrorCode::DeliberationExists,
                        format!("session {id} already holds a deliberation"),
                        "omit session_id to start a new deliberation in a new session",
                    ),
                    Some(id),
                ));
            }
            (id, Vec::new())
        }
        None => {
            let id = call.starting_session_id();
            (id.clone(), vec![Fact::SessionStarted { session_id: id }])
        }
    };
    let goal = call.scanned("goal", plan.goal_path, plan.goal);
    let mut constraints = Vec::with_capacity(plan.constraints.len());
    for (i, c) in plan.constraints.iter().enumerate() {
        constraints.push(call.scanned(
            &format!("{}[{i}]", plan.constraints_key),
            &[PathStep::Key(plan.constraints_key), PathStep::Index(i)],
            c,
        ));
    }
    let deliberation_id = format!("delib-{}", call.app.deliberations().all().count() + 1);
    let root_node_id = "node-1".to_owned();
    let analysis = call.analysis(
        plan.mode.user_mode,
        "start.goal_as_root",
        "caller",
        Vec::new(),
        &["the root node is the goal as the caller stated it"],
    );
    facts.push(Fact::DeliberationStarted(
        crate::events::deliberation::DeliberationStarted {
            session_id: session_id.clone(),
            deliberation_id: deliberation_id.clone(),
            goal: goal.clone(),
            constraints,
            user_mode: plan.mode.user_mode.to_owned(),
            internal_method: plan.mode.internal_method.to_owned(),
            profile: plan.profile.to_owned(),
            budgets: plan.budgets,
            root_node_id: root_node_id.clone(),
        },
    ));
    facts.push(Fact::NodeAdded(NodeAdded {
        session_id: session_id.clone(),
        node_id: root_node_id.clone(),
        parent_ids: Vec::new(),
        content: goal,
        branch_id: "main".to_owned(),
        depth: 0,
        kind: "goal".to_owned(),
        tags: vec!["goal".to_owned()],
        analysis,
    }));
    Ok(Started {
        session_id,
        deliberation_id,
        root_node_id,
        facts,
    })
}
