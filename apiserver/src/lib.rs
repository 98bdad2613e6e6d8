//! Embedded Kubernetes-compatible API server: storage, REST and watch, discovery, CRDs, patches, TLS, authentication and RBAC (no OCM knowledge).
