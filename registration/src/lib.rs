//! Registration: hub controllers (acceptance, cluster namespace and RBAC, leases, CSR approval, cluster sets) and the agent (bootstrap, CSR, heartbeat, status, rotation).
