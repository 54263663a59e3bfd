@_exported import NimbusCore
