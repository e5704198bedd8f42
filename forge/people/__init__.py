"""Label Studio, the review tool: its REST client and the server the project starts (infrastructure below review)."""
