package application

import (
	"github.com/gin-gonic/gin"
	"golang.org/x/sync/errgroup"

	"github.com/hephaestus-dev/hephaestus/ports"
)

var _ gin.HandlerFunc
var _ errgroup.Group
var _ ports.Clock
