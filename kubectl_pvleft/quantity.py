"""resource.Quantity as the API server parses it (``500Mi`` < ``2Gi``), for comparisons that must not be
string comparisons. The parser itself is the port of apimachinery's ParseQuantity that ``--sort-by`` uses."""

from kubectl_pvleft.columns import parse_quantity

__all__ = ["parse_quantity"]
