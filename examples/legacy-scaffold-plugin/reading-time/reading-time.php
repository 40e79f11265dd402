<?php
/**
 * Plugin Name: Reading Time
 * Description: Estimates how long a post takes to read; [reading_time] prints it.
 * Version: 0.3.1
 * Author: Codebox example
 * License: GPL-2.0-or-later
 *
 * @package Reading_Time
 */

if ( ! defined( 'ABSPATH' ) ) {
	exit;
}

/**
 * Words a reader gets through per minute: the reading_time_wpm option, 200 by default.
 *
 * @return int
 */
function reading_time_words_per_minute() {
	$wpm = (int) get_option( 'reading_time_wpm', 200 );
	return $wpm > 0 ? $wpm : 200;
}

/**
 * Minutes needed to read $text (markup and shortcodes are not words).
 *
 * Known bug kept for the example: text with no words at all still takes "1 minute".
 *
 * @param string $text Post content.
 * @return int
 */
function reading_time_minutes( $text ) {
	$words = str_word_count( wp_strip_all_tags( strip_shortcodes( $text ) ) );
	return max( 1, (int) ceil( $words / reading_time_words_per_minute() ) );
}

/**
 * [reading_time]: the current post's reading time, e.g. "3 min read".
 *
 * @return string
 */
function reading_time_shortcode() {
	$post = get_post();
	if ( ! $post ) {
		return '';
	}
	return sprintf( '%d min read', reading_time_minutes( $post->post_content ) );
}
add_shortcode( 'reading_time', 'reading_time_shortcode' );
