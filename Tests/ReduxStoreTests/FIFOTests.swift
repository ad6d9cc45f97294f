import Testing
@testable import ReduxStore

// The queue behind the store's rule for what its callbacks dispatch (`FIFO`): what is handed in
// while it is drained is taken after what was there, in order; a drained queue holds nothing.

@Suite("The queue of work dispatched from callbacks")
struct FIFOTests {
    @Test("elements handed in while the queue is drained are taken after those already in it")
    func appendsDuringDrainComeLast() {
        var queue = FIFO<Int>()
        #expect(queue.isEmpty)
        queue.append(1)
        queue.append(contentsOf: [2, 3])
        var taken: [Int] = []
        while let next = queue.popFirst() {
            taken.append(next)
            // Each element below 4 hands in two more, as a reducer dispatching twice would.
            if next < 4 { queue.append(contentsOf: [next * 10, next * 10 + 1]) }
            queue._checkInvariants()
        }
        #expect(taken == [1, 2, 3, 10, 11, 20, 21, 30, 31])
        #expect(queue.isEmpty)
    }

    @Test("a queue that keeps getting one element and giving it back stays one element long")
    func drainedQueueStartsOver() {
        var queue = FIFO<String>()
        var count = 0
        queue.append("a")
        while let next = queue.popFirst() {
            count += 1
            #expect(next == "a")
            #expect(queue.isEmpty)
            if count < 1_000 { queue.append("a") }
        }
        #expect(count == 1_000)
        #expect(queue.takeAll().isEmpty)
    }

    @Test("takeAll hands over what was not taken yet, oldest first, and empties the queue")
    func takeAllAfterSomeTaken() {
        var queue = FIFO([1, 2, 3, 4])
        #expect(queue.popFirst() == 1)
        #expect(queue.takeAll() == [2, 3, 4])
        #expect(queue.isEmpty)
        #expect(queue.popFirst() == nil)
        queue.append(5)
        #expect(queue.popFirst() == 5)
        queue._checkInvariants()
    }
}
