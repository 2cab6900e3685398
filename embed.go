// Package haloforge embeds the data files that ship inside the binary: the
// default pins, the step scripts and the container definitions, so that the
// binary works away from a checkout.
package haloforge

import "embed"

// VersionsEnv is the default versions.env.
//
//go:embed versions.env
var VersionsEnv []byte

// Scripts is the default scripts tree (scripts/<track>/<file>, scripts/lib).
//
//go:embed all:scripts
var Scripts embed.FS

// Toolbox holds the container definitions and toolbox.env.
//
//go:embed all:toolbox
var Toolbox embed.FS
