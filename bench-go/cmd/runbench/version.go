package main

import "settbench/sett"

func settLibVersion() int { return sett.Version() }
