// SPDX-License-Identifier: BSD-3-Clause
// link_external.go: with `-tags glyd_external` the package names no
// library itself; CGO_CFLAGS and CGO_LDFLAGS say where glyd.h and libglyd
// are (the Makefile does so for a build folder other than build/).

//go:build glyd_external

package glyd

import "C"
