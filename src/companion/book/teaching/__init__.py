"""Teaching: the exercises' checks and labels, and the course plan computed from them."""
