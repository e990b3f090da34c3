package projections

// RowPhase exports rowPhase to the tests.
var RowPhase = rowPhase
