"""`kvspec hunt`: CrossHair searches of the spec's own rules (search), and the seed's rules as
written, with the spec's resolutions switched off, for it to search (seed_rules)."""
