//! Cooperative shutdown: a cheap, clonable token that tasks await, with child tokens that can
//! be cancelled on their own (e.g. controllers that run only while this process leads).

use std::sync::Arc;

use tokio::sync::watch;

/// A cancellation token. Cancelling a token cancels its children; cancelling a child leaves
/// the parent running.
#[derive(Clone, Debug)]
pub struct Shutdown {
    own: Arc<watch::Sender<bool>>,
    parent: Option<Box<Shutdown>>,
}

impl Default for Shutdown {
    fn default() -> Self {
        Shutdown::new()
    }
}

impl Shutdown {
    /// A fresh, uncancelled token.
    pub fn new() -> Shutdown {
        let (tx, _) = watch::channel(false);
        Shutdown {
            own: Arc::new(tx),
            parent: None,
        }
    }

    /// A token cancelled with this one, or on its own.
    pub fn child(&self) -> Shutdown {
        let (tx, _) = watch::channel(false);
        Shutdown {
            own: Arc::new(tx),
            parent: Some(Box::new(self.clone())),
        }
    }

    /// Cancels this token and its children.
    pub fn cancel(&self) {
        self.own.send_replace(true);
    }

    /// Whether this token or an ancestor was cancelled.
    pub fn is_cancelled(&self) -> bool {
        *self.own.borrow() || self.parent.as_ref().is_some_and(|p| p.is_cancelled())
    }

    /// Completes when this token or an ancestor is cancelled.
    pub async fn cancelled(&self) {
        let mut own = self.own.subscribe();
        match &self.parent {
            None => {
                let _ = own.wait_for(|v| *v).await;
            }
            Some(parent) => {
                tokio::select! {
                    _ = own.wait_for(|v| *v) => {}
                    _ = Box::pin(parent.cancelled()) => {}
                }
            }
        }
    }

    /// Cancels this token on SIGINT or SIGTERM (spawns a task; needs a Tokio runtime).
    pub fn cancel_on_signal(&self) {
        let token = self.clone();
        tokio::spawn(async move {
            wait_for_signal().await;
            tracing::info!("shutdown requested");
            token.cancel();
        });
    }
}

/// Completes on SIGINT (Ctrl-C) or SIGTERM.
pub async fn wait_for_signal() {
    #[cfg(unix)]
    {
        use tokio::signal::unix::{SignalKind, signal};
        match signal(SignalKind::terminate()) {
            Ok(mut term) => {
                tokio::select! {
                    _ = tokio::signal::ctrl_c() => {}
                    _ = term.recv() => {}
                }
            }
            Err(_) => {
                let _ = tokio::signal::ctrl_c().await;
            }
        }
    }
    #[cfg(not(unix))]
    {
        let _ = tokio::signal::ctrl_c().await;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn cancelling_a_parent_cancels_its_children_but_not_the_reverse() {
        let root = Shutdown::new();
        let child = root.child();
        let grandchild = child.child();
        child.cancel();
        assert!(grandchild.is_cancelled());
        grandchild.cancelled().await;
        assert!(!root.is_cancelled());

        let other = root.child();
        root.cancel();
        other.cancelled().await;
        assert!(other.is_cancelled());
    }
}
