//! `every_step`: worker 1 is crashed right after its step N (a browser command or a journal
//! write), numbered as a recorded clean run made them; and that clean run itself.

use super::FaultUnit;
use crate::plan::FaultPoint;
use crate::trial::context::{AtStrike, UnitCtx};
use crate::trial::drive::{Strike, Tracked};
use crate::trial::error::TrialError;

/// A crash right after step `step`.
#[derive(Clone, Copy)]
pub(in crate::trial) struct StepCrash {
    pub(super) step: u32,
    pub(super) label: &'static str,
}

#[async_trait::async_trait]
impl FaultUnit for StepCrash {
    fn planned(&self) -> String {
        format!(
            "crash right after step {} (`{}` in the recorded clean run)",
            self.step, self.label
        )
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        None
    }

    fn strike_step(&self) -> Option<u32> {
        Some(self.step)
    }

    async fn at_strike(
        &self,
        e: &mut UnitCtx<'_, '_>,
        _first: &mut Tracked,
        strike: Strike,
        _later: &mut Vec<Tracked>,
    ) -> Result<AtStrike, TrialError> {
        // The run must be the one recorded: a crash after another command than the one the
        // trial is named for tests something else, silently.
        if let Some(step) = strike.step
            && step.label != self.label
        {
            e.not_struck(format!(
                "step {} was `{}` in this run, `{}` in the recorded clean run: the scenario does not repeat its steps",
                self.step, step.label, self.label
            ));
        }
        Ok(AtStrike::Crash)
    }
}

pub(super) static CLEAN: Clean = Clean;

/// No fault: worker 1 runs to its end (a recording run).
pub(super) struct Clean;

impl FaultUnit for Clean {
    fn planned(&self) -> String {
        "no fault: a clean run, recorded".to_owned()
    }

    fn strike_point(&self) -> Option<FaultPoint> {
        None
    }

    fn recovers(&self) -> bool {
        false
    }
}
