//! Addon framework: the AgentAddon trait, the addon manager that installs addon agents through ManifestWork, and example addons.
