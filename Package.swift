// swift-tools-version: 6.0
import PackageDescription

#if os(Linux)
    import Foundation
    import Glibc

    /// The `nimbus` binary's relative relocations packed (DT_RELR, `-z pack-relative-relocs`, linked by lld): as plain
    /// entries they are 4 MB that every process reads at start and keeps resident, ~6 MB of a device daemon's memory
    /// (`BENCHMARKS.md`, "A daemon's peak at 100,000 files under 100 MB"). Only where the C library applies them (glibc
    /// 2.36 and later; an older one refuses such a binary) and an `ld.lld` is on `PATH` (Swift's Linux toolchains carry one).
    let packedRelocations: [LinkerSetting] = {
        // "glibc 2.36"; nothing with another C library.
        var text = [CChar](repeating: 0, count: 64)
        let length = confstr(Int32(_CS_GNU_LIBC_VERSION), &text, text.count)
        let name = length > 0 ? String(decoding: text.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self) : ""
        let glibc = name.hasPrefix("glibc ") ? name.dropFirst(6).split(separator: ".").compactMap { Int($0) } : []
        let paths = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":")
        guard glibc.count >= 2, (glibc[0], glibc[1]) >= (2, 36),
            paths.contains(where: { FileManager.default.isExecutableFile(atPath: "\($0)/ld.lld") })
        else { return [] }
        return [.unsafeFlags(["-use-ld=lld", "-Xlinker", "-z", "-Xlinker", "pack-relative-relocs"])]
    }()
#else
    let packedRelocations: [LinkerSetting] = []
#endif

let package = Package(
    name: "Nimbus",
    platforms: [.macOS(.v14)],
    products: [
        .executable(name: "nimbus", targets: ["nimbus"]),
        .library(name: "NimbusKit", targets: ["NimbusKit"]),
    ],
    dependencies: [
        .package(url: "https://github.com/hummingbird-project/hummingbird.git", from: "2.28.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-websocket.git", from: "2.8.1"),
        .package(url: "https://github.com/hummingbird-project/hummingbird-auth.git", from: "2.5.0"),
        .package(url: "https://github.com/hummingbird-project/swift-websocket.git", from: "1.6.2"),
        .package(url: "https://github.com/groue/GRDB.swift.git", from: "7.10.0"),
        .package(url: "https://github.com/apple/swift-argument-parser.git", from: "1.8.2"),
        .package(url: "https://github.com/apple/swift-log.git", from: "1.16.2"),
        .package(url: "https://github.com/apple/swift-metrics.git", from: "2.13.0"),
        .package(url: "https://github.com/swift-server/swift-prometheus.git", from: "2.4.1"),
        .package(url: "https://github.com/swift-server/swift-service-lifecycle.git", from: "2.13.0"),
        .package(url: "https://github.com/apple/swift-crypto.git", from: "3.12.3"),
        .package(url: "https://github.com/swift-server/async-http-client.git", from: "1.37.0"),
        .package(url: "https://github.com/apple/swift-http-types.git", from: "1.8.0"),
        .package(url: "https://github.com/apple/swift-nio.git", from: "2.101.2"),
        .package(url: "https://github.com/apple/swift-nio-ssl.git", from: "2.37.6"),
        .package(url: "https://github.com/apple/swift-nio-http2.git", from: "1.46.0"),
        .package(url: "https://github.com/apple/swift-certificates.git", from: "1.21.1"),
        .package(url: "https://github.com/apple/swift-asn1.git", from: "1.7.4"),
        .package(url: "https://github.com/swiftlang/swift-subprocess.git", from: "1.0.2"),
        .package(url: "https://github.com/apple/swift-system.git", from: "1.8.1"),
        .package(url: "https://github.com/vapor/multipart-kit.git", from: "4.7.1"),
        .package(url: "https://github.com/vapor/postgres-nio.git", from: "1.33.2"),
        .package(url: "https://github.com/hummingbird-project/swift-mustache.git", from: "2.1.1"),
    ],
    targets: [
        .target(
            name: "NimbusCore",
            dependencies: [
                .product(name: "Crypto", package: "swift-crypto")
            ]
        ),
        .target(
            name: "NimbusStore",
            dependencies: [
                "NimbusCore", "CFileOps",
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "_NIOFileSystem", package: "swift-nio"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
            ]
        ),
        .target(
            name: "NimbusPostgres",
            dependencies: [
                "NimbusCore", "NimbusStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "NimbusServer",
            dependencies: [
                "NimbusCore",
                "NimbusStore",
                "NimbusPostgres",
                "CProcessTuning",
                .product(name: "Hummingbird", package: "hummingbird"),
                .product(name: "HummingbirdCore", package: "hummingbird"),
                .product(name: "HummingbirdHTTP2", package: "hummingbird"),
                .product(name: "HummingbirdWebSocket", package: "hummingbird-websocket"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP2", package: "swift-nio-http2"),
                .product(name: "NIOTLS", package: "swift-nio"),
                .product(name: "UnixSignals", package: "swift-service-lifecycle"),
                .product(name: "HummingbirdBcrypt", package: "hummingbird-auth"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Metrics", package: "swift-metrics"),
                .product(name: "Prometheus", package: "swift-prometheus"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "MultipartKit", package: "multipart-kit"),
                .product(name: "Mustache", package: "swift-mustache"),
            ],
            // The dashboard's templates, stylesheet and script, compiled into the binary.
            resources: [.embedInCode("Dashboard/Assets")]
        ),
        .target(
            name: "NimbusKit",
            dependencies: [
                "NimbusCore", "CFileOps",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
            ]
        ),
        .target(
            name: "NimbusDevice",
            dependencies: [
                "NimbusKit", "NimbusCore", "CFileOps", "CProcessTuning",
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "GRDBSQLite", package: "GRDB.swift"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "Crypto", package: "swift-crypto"),
            ]
        ),
        .target(name: "CProcessTuning"),
        .target(name: "CFileOps"),
        .target(name: "NimbusTestingCore"),
        .target(
            name: "NimbusTesting",
            dependencies: [
                "NimbusTestingCore", "NimbusCore", "NimbusStore", "NimbusServer", "NimbusPostgres", "NimbusKit",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "X509", package: "swift-certificates"),
                .product(name: "SwiftASN1", package: "swift-asn1"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "_CryptoExtras", package: "swift-crypto"),
                .product(name: "ServiceLifecycle", package: "swift-service-lifecycle"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
            ]
        ),
        .executableTarget(
            name: "nimbus",
            dependencies: [
                "NimbusCore", "NimbusStore", "NimbusServer", "NimbusPostgres", "NimbusKit", "NimbusDevice",
                .product(name: "ArgumentParser", package: "swift-argument-parser"),
                .product(name: "Logging", package: "swift-log"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
            ],
            linkerSettings: packedRelocations
        ),
        .executableTarget(
            name: "ShoppingList",
            dependencies: ["NimbusKit"],
            path: "Examples/ShoppingList"
        ),
        .executableTarget(name: "Notes", dependencies: ["NimbusKit"], path: "Examples/Notes"),
        // Run by EndToEndTests.DeviceResponsivenessTests: sync rounds in a process of their own.
        .executableTarget(
            name: "device-responsiveness-probe", dependencies: ["NimbusDevice", "NimbusKit", "NimbusCore"],
            path: "Tests/DeviceResponsivenessProbe"),
        .executableTarget(name: "Bookmarks", dependencies: ["NimbusKit"], path: "Examples/Bookmarks"),
        .target(
            name: "BenchmarkSupport",
            dependencies: [
                "NimbusKit", "NimbusCore", "NimbusStore", "NimbusDevice", .product(name: "GRDB", package: "GRDB.swift"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "NIOPosix", package: "swift-nio"), .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/BenchmarkSupport"
        ),
        .executableTarget(
            name: "RecordBenchmarks",
            dependencies: [
                "BenchmarkSupport", "NimbusKit", "NimbusCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"), .product(name: "NIOCore", package: "swift-nio"),
            ],
            path: "Benchmarks/RecordBenchmarks"
        ),
        .executableTarget(
            name: "DocumentBenchmarks",
            dependencies: [
                "BenchmarkSupport", "NimbusDevice", "NimbusKit", "NimbusCore",
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/DocumentBenchmarks"
        ),
        .executableTarget(
            name: "KeyValueBenchmarks",
            dependencies: [
                "BenchmarkSupport", "NimbusKit", "NimbusCore",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "HTTPTypes", package: "swift-http-types"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/KeyValueBenchmarks"
        ),
        .executableTarget(
            name: "ScaleOutBenchmarks",
            dependencies: [
                "BenchmarkSupport", "NimbusKit", "NimbusCore", "NimbusTestingCore", "NimbusPostgres", "NimbusStore",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Logging", package: "swift-log"),
            ],
            path: "Benchmarks/ScaleOutBenchmarks"
        ),
        .testTarget(name: "NimbusCoreTests", dependencies: ["NimbusCore", "NimbusTestingCore"]),
        .testTarget(
            name: "NimbusStoreTests",
            dependencies: [
                "NimbusStore", "NimbusPostgres", "NimbusCore", "NimbusTestingCore",
                .product(name: "GRDB", package: "GRDB.swift"), .product(name: "PostgresNIO", package: "postgres-nio"),
            ]),
        .testTarget(
            name: "NimbusServerTests",
            dependencies: [
                "NimbusServer", "NimbusTesting", "NimbusCore", "NimbusKit", "NimbusStore",
                .product(name: "WSClient", package: "swift-websocket"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "GRDB", package: "GRDB.swift"),
            ]
        ),
        .testTarget(name: "NimbusKitTests", dependencies: ["NimbusKit", "NimbusCore", "NimbusTestingCore"]),
        .testTarget(
            name: "NimbusDeviceTests",
            dependencies: [
                "NimbusDevice", "NimbusTestingCore", "NimbusTesting", "NimbusKit", "NimbusCore", "NimbusServer",
                .product(name: "Logging", package: "swift-log"), .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "NIOCore", package: "swift-nio"),
            ]),
        .testTarget(
            name: "EndToEndTests",
            dependencies: [
                "NimbusTesting", "NimbusKit", "NimbusServer", "NimbusCore", "NimbusStore", "NimbusTestingCore", "NimbusPostgres",
                .product(name: "PostgresNIO", package: "postgres-nio"),
                .product(name: "Crypto", package: "swift-crypto"),
                .product(name: "AsyncHTTPClient", package: "async-http-client"),
                .product(name: "NIOSSL", package: "swift-nio-ssl"),
                .product(name: "NIOHTTP1", package: "swift-nio"),
                .product(name: "NIOCore", package: "swift-nio"),
                .product(name: "Subprocess", package: "swift-subprocess"),
                .product(name: "SystemPackage", package: "swift-system"),
            ]
        ),
    ],
    swiftLanguageModes: [.v6]
)
