"""What ``submitgen inspect`` reports, and what it reads around a code object."""
