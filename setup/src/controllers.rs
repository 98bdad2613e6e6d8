//! Controllers that run beside an embedded hub's own.

use std::sync::Arc;

use ocm_hub::embedded::HubControllers;

/// The addons' generic hub controllers, run by every hub: install strategies and configs, and
/// the template addons (signing CA secrets without a namespace are read from `$POD_NAMESPACE`,
/// else `open-cluster-management-hub`, as upstream's addon manager does).
pub fn addon_controllers() -> HubControllers {
    addon_controllers_counted(Arc::default())
}

/// [`addon_controllers`], with the install controller counting its passes and the addons they
/// looked at in `stats` (for benchmarks).
pub fn addon_controllers_counted(
    stats: Arc<ocm_addon_framework::manager::InstallStats>,
) -> HubControllers {
    use ocm_addon_framework::template::{DEFAULT_MANAGER_NAMESPACE, run_template_addons};
    let namespace = std::env::var("POD_NAMESPACE")
        .ok()
        .filter(|ns| !ns.is_empty())
        .unwrap_or_else(|| DEFAULT_MANAGER_NAMESPACE.to_owned());
    HubControllers(vec![
        Arc::new(move |client, shutdown| {
            Box::pin(
                ocm_addon_framework::manager::run_install_strategies_counted(
                    client,
                    shutdown,
                    stats.clone(),
                ),
            )
        }),
        Arc::new(move |client, shutdown| {
            Box::pin(run_template_addons(client, namespace.clone(), shutdown))
        }),
    ])
}
