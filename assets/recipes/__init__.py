"""Recipe asset packages, one per paper (assets/recipes/<paper>/), plus helpers they share."""
