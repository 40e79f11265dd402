<?php
/**
 * Plugin Name: Buggy Counter
 * Description: Fixture for a bug-reproduction recipe: [word_count] miscounts text with repeated spaces.
 * Version: 1.0.0
 */

function buggy_counter_count( $text ) {
	// Bug: splitting on a single space counts empty strings between repeated spaces as words.
	return count( explode( ' ', trim( $text ) ) );
}

add_shortcode( 'word_count', function ( $atts, $content = '' ) {
	return '<span class="word-count">' . (int) buggy_counter_count( wp_strip_all_tags( $content ) ) . '</span>';
} );
