//! How a Klusterlet deploys its agents: its [`Mode`] and the agent Deployments ([`Agent`])
//! each mode runs, with their ServiceAccounts.

use ocm_api::operator::v1::Klusterlet;

/// ServiceAccount of the registration agent.
pub const REGISTRATION_SA: &str = "klusterlet-registration-sa";

/// ServiceAccount of the work agent (and of the Singleton agent).
pub const WORK_SA: &str = "klusterlet-work-sa";

/// How a Klusterlet deploys its agents (`spec.deployOption.mode`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// Registration and work agents on the managed cluster.
    Default,
    /// One agent on the managed cluster.
    Singleton,
    /// Registration and work agents on a management cluster.
    Hosted,
    /// One agent on a management cluster.
    SingletonHosted,
}

impl Mode {
    /// The Klusterlet's mode; unset means Default.
    pub fn of(klusterlet: &Klusterlet) -> Mode {
        match klusterlet
            .spec
            .deploy_option
            .as_ref()
            .map(|d| d.mode.as_str())
        {
            Some("Singleton") => Mode::Singleton,
            Some("Hosted") => Mode::Hosted,
            Some("SingletonHosted") => Mode::SingletonHosted,
            _ => Mode::Default,
        }
    }

    /// Whether the agents run on another cluster than the managed one.
    pub fn hosted(self) -> bool {
        matches!(self, Mode::Hosted | Mode::SingletonHosted)
    }
}

/// One agent Deployment a Klusterlet runs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Agent {
    /// The registration agent (Default mode).
    Registration,
    /// The work agent (Default mode).
    Work,
    /// Registration and work in one (Singleton mode).
    Singleton,
}

impl Agent {
    /// The agents of a mode.
    pub fn of(mode: Mode) -> &'static [Agent] {
        match mode {
            Mode::Default | Mode::Hosted => &[Agent::Registration, Agent::Work],
            Mode::Singleton | Mode::SingletonHosted => &[Agent::Singleton],
        }
    }

    /// Name of the agent's Deployment.
    pub fn deployment_name(self, klusterlet: &str) -> String {
        match self {
            Agent::Registration => format!("{klusterlet}-registration-agent"),
            Agent::Work => format!("{klusterlet}-work-agent"),
            Agent::Singleton => format!("{klusterlet}-agent"),
        }
    }

    /// The ServiceAccount it runs as.
    pub fn service_account(self) -> &'static str {
        match self {
            Agent::Registration => REGISTRATION_SA,
            Agent::Work | Agent::Singleton => WORK_SA,
        }
    }

    /// Whether it does the registration agent's job.
    pub fn registers(self) -> bool {
        matches!(self, Agent::Registration | Agent::Singleton)
    }

    /// Whether it does the work agent's job.
    pub fn works(self) -> bool {
        matches!(self, Agent::Work | Agent::Singleton)
    }
}
