"""kvspec's adapters: how the conformance suite drives an implementation under test."""
