// Tests that use a server get the light helpers (seeded randomness, waiting, cleanup) with it.
@_exported import NimbusTestingCore
