import NimbusTestingCore
import Testing

@testable import NimbusServer

@Suite(.cleansUp) struct RecordIndexerTests {
    /// Words as searches see them: letters and digits, lower-cased, each once, in order of appearance.
    func reference(_ text: String) -> [String] {
        var seen = Set<String>()
        return text.lowercased().split { !$0.isLetter && !$0.isNumber }.map(String.init).filter { seen.insert($0).inserted }
    }

    @Test func asciiTextSplitsLikeAnyOtherText() {
        let every = String(decoding: (0..<128).map { UInt8($0) }, as: UTF8.self)
        for text in [every, "Milk, 2% FAT-free milk", "a\r\nb\tC_d", "", "   ", "x1y2 Z3"] {
            #expect(RecordIndexer.words(text) == reference(text))
        }
        #expect(RecordIndexer.words("Milk, 2% FAT-free milk") == ["milk", "2", "fat", "free"])
    }

    @Test func otherTextKeepsItsLettersAndDigits() {
        #expect(RecordIndexer.words("Crème BRÛLÉE, crème") == ["crème", "brûlée"])
        #expect(RecordIndexer.words("東京 ٣ ok") == ["東京", "٣", "ok"])
    }
}
