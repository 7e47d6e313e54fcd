//! TODO(helper): replace this stub.

use super::common::Call;
use crate::app::{Outcome, Rejection};

pub(crate) fn decide_run_thinking_mode(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_intent_router(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_autopilot(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}

pub(crate) fn decide_pipeline(_call: &mut Call<'_>) -> Outcome {
    Err((
        Rejection::new("not_implemented", "not implemented yet", "wait"),
        None,
    ))
}
