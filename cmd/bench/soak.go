package main

var soakSettings struct {
	minutes int
	share   float64
	out     string
}

func runSoak(senders, capacitySeconds int) error { return nil }
