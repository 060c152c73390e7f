package credential

// The leaf package that takes a domain type: every importer of the credential would get it too.
import (
	"strconv"

	"github.com/hephaestus-dev/hephaestus/domain/connection"
)

var _ = strconv.Itoa
var _ connection.Kind
