import Crypto
import Foundation
import NimbusCore
import Testing

@testable import NimbusDevice

/// Content hashes held inline in the engine's trees and files: the journal writes back, and the server is sent,
/// exactly the text each was made from, and two are equal exactly when their texts are.
@Suite struct ContentKeyTests {
    @Test func aSHA256IsHeldInlineAndGivesBackItsDigits() {
        for bytes in [Data(), Data("hello".utf8), Data((0..<255).map { UInt8($0) })] {
            let digits = Secrets.hex(SHA256.hash(data: bytes))
            let key = ContentKey(digits)
            guard case .sha256 = key else {
                Issue.record("\(digits) was not held inline")
                continue
            }
            #expect(key.text == digits)
        }
    }

    @Test func anythingElseKeepsItsTextAndDiffersFromTheDigits() {
        let digits = String(repeating: "0123456789abcdef", count: 4)
        for text in [
            digits.uppercased(), String(digits.dropLast()), digits + "0", String(digits.dropLast()) + "g", "", "sha256:x",
        ] {
            let key = ContentKey(text)
            #expect(key == .text(text))
            #expect(key.text == text)
            #expect(key != ContentKey(digits))
        }
    }

    @Test func itemsAndFilesCompareByTheirHashesText() {
        let digits = String(repeating: "f0", count: 32)
        var item = SyncItem(place: Place(parent: nil, name: "a.txt"), kind: .file, content: digits)
        #expect(item.content == digits)
        #expect(item == SyncItem(place: item.place, kind: .file, content: String(digits)))
        #expect(item.differsInContent(from: SyncItem(place: item.place, kind: .file, content: digits.uppercased())))
        item.content = nil
        #expect(item.contentKey == nil)

        let file = LocalFile(id: ItemID("x"), path: "a.txt", inode: 1, size: 2, modified: 3, content: digits)
        #expect(file.content == digits)
        #expect(file == LocalFile(id: ItemID("x"), path: "a.txt", inode: 1, size: 2, modified: 3, content: digits))
        #expect(file != LocalFile(id: ItemID("x"), path: "a.txt", inode: 1, size: 2, modified: 3, content: nil))
    }
}
