import Foundation
import Logging
import NimbusServer
import Synchronization
import NimbusTestingCore
import Testing

@Suite(.cleansUp) struct LineLogHandlerTests {
    final class Lines: Sendable {
        let lines = Mutex<[String]>([])
        func append(_ line: String) { lines.withLock { $0.append(line) } }
    }

    @Test func eachEventIsOneJSONObjectWithItsMetadata() throws {
        let sink = Lines()
        var logger = Logger(label: "nimbus") { LineLogHandler(label: $0, format: .json, write: sink.append) }
        logger[metadataKey: "request"] = "r1"
        logger.info("signed in", metadata: ["account": "_abc", "message": "not the message"])
        logger.debug("below the level")
        let lines = sink.lines.withLock { $0 }
        #expect(lines.count == 1)
        #expect(lines.first?.hasSuffix("\n") == true)
        let fields = try JSONDecoder().decode([String: String].self, from: Data(try #require(lines.first).utf8))
        #expect(fields["message"] == "signed in")
        #expect(fields["level"] == "info")
        #expect(fields["label"] == "nimbus")
        #expect(fields["account"] == "_abc")
        #expect(fields["request"] == "r1")
        #expect(fields["time"]?.hasSuffix("Z") == true)
    }

    @Test func eachEventIsOneTextLineWithItsMetadataInKeyOrder() throws {
        let sink = Lines()
        var logger = Logger(label: "nimbus") { LineLogHandler(label: $0, format: .text, write: sink.append) }
        logger[metadataKey: "request"] = "r1"
        logger.warning("signed in", metadata: ["account": "_abc"])
        logger.debug("below the level")
        let lines = sink.lines.withLock { $0 }
        #expect(lines.count == 1)
        let line = try #require(lines.first)
        let time = try #require(line.split(separator: " ").first)
        #expect(time.hasSuffix("Z"))
        #expect(line.dropFirst(time.count) == " warning nimbus: account=_abc request=r1 signed in\n")
    }
}
