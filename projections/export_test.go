package projections

// RowPhase exports rowPhase to the tests.
var RowPhase = rowPhase

// Guard exports guard to the tests.
var Guard = guard
