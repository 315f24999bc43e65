"""Contact mechanics: the contact-law interface and its laws (Hertz-Mindlin, the linear
spring-dashpot, saturated friction), the one contact pipeline every geometry runs on, pair
contact forces and the per-contact tables."""
